// Fuzz target: tokenizer.json (Tokenizer::load, both pipelines), then one encode and decode and one
// padded, truncated batch, since a vocabulary or merge table that loads must not break tokenization
// either. tokenizer_config.json is fixed (a pad token, so that padding is reached); the texts use
// only characters the seeds' small vocabularies cover, so that seeds encode rather than fail.
#include "host/text/tokenizer.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace lrhost;
  const auto& dir = fuzz::scratch();
  static const bool prepared = [&] {
    const std::string config = R"({"pad_token": "<pad>", "model_max_length": 16})";
    fuzz::write_bytes(dir / "tokenizer_config.json", reinterpret_cast<const uint8_t*>(config.data()), config.size());
    return true;
  }();
  (void)prepared;
  fuzz::write_bytes(dir / "tokenizer.json", data, size);
  for (auto source : {text::PipelineSource::transformers, text::PipelineSource::file}) {
    fuzz::expect_clean([&] {
      text::Tokenizer tokenizer = text::Tokenizer::load(dir, source);
      fuzz::expect_clean([&] { (void)tokenizer.decode(tokenizer.encode("abc a12\n")); });
      text::BatchOptions options;
      options.max_length = 4;
      options.truncation = true;
      options.padding = text::Padding::max_length;
      fuzz::expect_clean([&] { (void)tokenizer.encode_batch({"ab", "a b 12 c"}, options); });
    });
  }
  return 0;
}
