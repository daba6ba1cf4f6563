// Unit tests of the NFC normalizer and transformers 5's Qwen2Tokenizer rebuild in host/text, on a tiny tokenizer.json
// with the whole byte-level alphabet and no merges (so ids spell the bytes): NFC on the file path and under
// Qwen2Tokenizer, its Unicode 9.0 tables, Qwen2's pre-tokenizer regex, the class's special-token defaults and
// id assignment, add_eos_token, and the errors these paths add (file and key named).
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "host/text/byte_level.hpp"
#include "host/text/nfc.hpp"
#include "host/text/tokenizer.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

using namespace lrhost;
using nlohmann::json;
using text::Tokenizer;
using QwenIds = std::vector<std::int32_t>;

namespace {

// Byte b is id b (the byte-level character of b); no merges. <|im_start|> is an added token at 256.
json qwen2_tokenizer_json() {
  json vocab = json::object();
  for (int byte = 0; byte < 256; ++byte) {
    std::string mapped;
    text::append_byte_level(mapped, std::string(1, static_cast<char>(byte)));
    vocab[mapped] = byte;
  }
  return {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", json::array({{{"id", 256},
                                     {"content", "<|im_start|>"},
                                     {"single_word", false},
                                     {"lstrip", false},
                                     {"rstrip", false},
                                     {"normalized", false},
                                     {"special", true}}})},
      {"normalizer", {{"type", "NFC"}}},
      {"pre_tokenizer",
       {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}}},
      {"post_processor", nullptr},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}}},
  };
}

struct QwenFolder {
  test::TempDir dir{"qwen2_tokenizer"};
  explicit QwenFolder(const json& tokenizer, const json& config = nullptr) {
    std::ofstream(dir.path / "tokenizer.json") << tokenizer.dump();
    if (!config.is_null()) std::ofstream(dir.path / "tokenizer_config.json") << config.dump();
  }
  Tokenizer load(text::PipelineSource source = text::PipelineSource::transformers) const {
    return Tokenizer::load(dir.path, source);
  }
};

// The ids of `text`'s bytes (id b is byte b).
QwenIds bytes_of(const std::string& text) {
  QwenIds ids;
  for (char byte : text) ids.push_back(static_cast<unsigned char>(byte));
  return ids;
}

std::string nfc(std::string_view text) {
  std::string out;
  text::append_nfc(out, text);
  return out;
}

void check_qwen2_load_error(const json& tokenizer, const json& config, const std::vector<std::string>& expected) {
  QwenFolder folder(tokenizer, config);
  try {
    folder.load();
    FAIL("loading succeeded");
  } catch (const util::Error& error) {
    std::string message = error.what();
    for (const std::string& part : expected) CHECK_MESSAGE(message.find(part) != std::string::npos, message);
  }
}

const json qwen2_config = {{"tokenizer_class", "Qwen2Tokenizer"}};

}  // namespace

TEST_CASE("NFC composes as tokenizers does: ICU restricted to Unicode 9.0") {
  CHECK(nfc("e\u0301") == "\u00e9");
  CHECK(nfc("plain ascii") == "plain ascii");
  CHECK(nfc("\u1100\u1161") == "\uac00");          // Hangul jamo compose
  CHECK(nfc("a\u0316\u0301") == "\u00e1\u0316");   // canonical reordering, then composition
  CHECK(nfc("\u212b") == "\u00c5");                // a singleton decomposition
  CHECK(nfc("a\u1df6\u0301") == "a\u1df6\u0301");  // U+1DF6 (Unicode 10) is a starter to tokenizers' tables
  CHECK(nfc("a\u0301\u0d3b") == "\u00e1\u0d3b");   // U+0D3B (Unicode 10) is not reordered
}

TEST_CASE("tokenizer.json's NFC normalizer runs on the file path; normalized added tokens match in NFC") {
  QwenFolder folder(qwen2_tokenizer_json());
  Tokenizer tokenizer = folder.load(text::PipelineSource::file);
  CHECK(tokenizer.encode("e\u0301") == bytes_of("\u00e9"));
  CHECK(tokenizer.encode("<|im_start|>\u0301") == QwenIds{256, 0xCC, 0x81});  // the mark after a token stays
  json no_normalizer = qwen2_tokenizer_json();
  no_normalizer["normalizer"] = nullptr;
  CHECK(QwenFolder(no_normalizer).load().encode("e\u0301") == bytes_of("e\u0301"));
  json sequence = qwen2_tokenizer_json();
  sequence["normalizer"] = {{"type", "Sequence"}, {"normalizers", json::array({{{"type", "NFC"}}})}};
  CHECK(QwenFolder(sequence).load().encode("e\u0301") == bytes_of("\u00e9"));
  json normalized_token = qwen2_tokenizer_json();
  normalized_token["added_tokens"].push_back({{"id", 257}, {"content", "<caf\u00e9>"}, {"normalized", true}});
  CHECK(QwenFolder(normalized_token).load().encode("<cafe\u0301>") == QwenIds{257});
}

TEST_CASE("Qwen2Tokenizer: transformers 5's pipeline replaces the file's") {
  json file = qwen2_tokenizer_json();
  file["normalizer"] = nullptr;  // the class installs NFC whatever the file says
  QwenFolder folder(file, qwen2_config);
  Tokenizer tokenizer = folder.load();
  CHECK(tokenizer.encode("e\u0301") == bytes_of("\u00e9"));
  CHECK(tokenizer.pre_tokenizer().describe().find("(?i:'s|'t") != std::string::npos);
  CHECK(tokenizer.pre_tokenizer().describe().find("use_regex=false") != std::string::npos);
  text::PreTokenizer::Pieces pieces;
  auto split = [&](const std::string& sample) {
    tokenizer.pre_tokenizer().run(sample, pieces);
    std::vector<std::string> out;
    for (std::size_t i = 0; i < pieces.size(); ++i) out.push_back(text::byte_level_decode(pieces[i]));
    return out;
  };
  using Pieces = std::vector<std::string>;
  CHECK(split("DON'T you'Re") == Pieces{"DON", "'T", " you", "'Re"});  // contractions in any case
  CHECK(split("x123") == Pieces{"x", "1", "2", "3"});                  // one digit per piece
  CHECK(split("a  b ") == Pieces{"a", " ", " b", " "});                // \s+(?!\S) leaves the last space
  CHECK(split("hi!!\r\n\r\nok") == Pieces{"hi", "!!\r\n\r\n", "ok"});
  CHECK(split("a\n\n b") == Pieces{"a", "\n\n", " b"});
  // The class's defaults: <|endoftext|> as unk, eos and pad, added after the vocabulary.
  CHECK(tokenizer.token_to_id("<|endoftext|>") == 257);
  CHECK(tokenizer.settings().pad_id == 257);
  CHECK(tokenizer.encode("<|im_start|>a<|endoftext|>") == QwenIds{256, 'a', 257});
  CHECK(tokenizer.prefix_ids().empty());
  CHECK(tokenizer.suffix_ids().empty());
}

TEST_CASE("Qwen2Tokenizer: added-token ids as transformers assigns them, config defaults; add_eos_token dropped") {
  json file = qwen2_tokenizer_json();
  file["added_tokens"][0]["id"] = 300;  // a gap: transformers re-adds it at the vocabulary's end
  json config = qwen2_config;
  config["pad_token"] = "<|im_start|>";
  config["eos_token"] = "<|im_end|>";
  config["add_eos_token"] = true;
  config["extra_special_tokens"] = json::array({"<|image_pad|>"});
  Tokenizer tokenizer = QwenFolder(file, config).load();
  CHECK(tokenizer.token_to_id("<|im_start|>") == 256);
  // Named tokens in transformers' order (eos, unk, pad), then the extra ones.
  CHECK(tokenizer.token_to_id("<|im_end|>") == 257);
  CHECK(tokenizer.token_to_id("<|endoftext|>") == 258);
  CHECK(tokenizer.token_to_id("<|image_pad|>") == 259);
  CHECK(tokenizer.settings().pad_id == 256);
  text::BatchOptions options;
  options.padding = text::Padding::longest;
  auto batch = tokenizer.encode_batch({"a", "ab"}, options);
  // transformers ignores add_eos_token next to a tokenizer.json: no <|im_end|> after the text.
  CHECK(batch[0].ids == QwenIds{'a', 256});
  CHECK(batch[1].ids == QwenIds{'a', 'b'});
  // tokenizer_config.json's added_tokens_decoder, when present, is what transformers reads.
  json with_decoder = qwen2_config;
  with_decoder["added_tokens_decoder"] = {{"256", {{"content", "<|vision_start|>"}, {"special", true}}}};
  Tokenizer from_config = QwenFolder(qwen2_tokenizer_json(), with_decoder).load();
  CHECK(from_config.token_to_id("<|vision_start|>") == 256);
  CHECK(!from_config.token_to_id("<|im_start|>"));
  // pad_token given as null: no pad token (the class default yields).
  json null_pad = qwen2_config;
  null_pad["pad_token"] = nullptr;
  CHECK(!QwenFolder(qwen2_tokenizer_json(), null_pad).load().settings().pad_id);
}

TEST_CASE("normalizer and Qwen2Tokenizer errors name the file and the key") {
  json nfkc = qwen2_tokenizer_json();
  nfkc["normalizer"] = {{"type", "NFKC"}};
  check_qwen2_load_error(nfkc, nullptr, {"tokenizer.json", "normalizer", "NFKC", "supported: none, NFC"});
  json two = qwen2_tokenizer_json();
  two["normalizer"] = {{"type", "Sequence"},
                       {"normalizers", json::array({{{"type", "NFC"}}, {{"type", "Lowercase"}}})}};
  check_qwen2_load_error(two, nullptr, {"tokenizer.json", "normalizer", "Lowercase"});
  json padded = qwen2_tokenizer_json();
  padded["padding"] = {{"direction", "Left"}};
  check_qwen2_load_error(padded, qwen2_config, {"tokenizer.json", "padding", "Qwen2Tokenizer"});
  json split_special = qwen2_config;
  split_special["split_special_tokens"] = true;
  check_qwen2_load_error(qwen2_tokenizer_json(), split_special, {"tokenizer_config.json", "split_special_tokens"});
  json lstrip = qwen2_config;
  lstrip["added_tokens_decoder"] = {{"256", {{"content", "<|im_start|>"}, {"special", true}, {"lstrip", true}}}};
  check_qwen2_load_error(qwen2_tokenizer_json(), lstrip,
                         {"tokenizer_config.json", "added_tokens_decoder[\"256\"].lstrip", "<|im_start|>"});
  json bad_id = qwen2_config;
  bad_id["added_tokens_decoder"] = {{"x", {{"content", "<|im_start|>"}}}};
  check_qwen2_load_error(qwen2_tokenizer_json(), bad_id, {"tokenizer_config.json", "added_tokens_decoder[\"x\"]"});
}
