// Fuzz target: tokenizer.json (Tokenizer::load, both pipelines), then one encode and decode, since
// a vocabulary or merge table that loads must not break tokenization either.
#include "host/text/tokenizer.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace lrhost;
  const auto& dir = fuzz::scratch();
  fuzz::write_bytes(dir / "tokenizer.json", data, size);
  for (auto source : {text::PipelineSource::transformers, text::PipelineSource::file}) {
    fuzz::expect_clean([&] {
      text::Tokenizer tokenizer = text::Tokenizer::load(dir, source);
      fuzz::expect_clean([&] { (void)tokenizer.decode(tokenizer.encode("pick up the red cube\n")); });
      text::BatchOptions options;
      options.max_length = 8;
      options.truncation = true;
      options.padding = text::Padding::max_length;
      fuzz::expect_clean([&] { (void)tokenizer.encode_batch({"push", "a b"}, options); });
    });
  }
  return 0;
}
