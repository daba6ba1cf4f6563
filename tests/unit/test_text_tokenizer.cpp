// Unit tests of the Hugging Face tokenizer (host/text) on small hand-written tokenizer.json files: merges by
// rank, added-token split, Digits, truncation and padding sides, decoding, the transformers-5 GPT2Tokenizer
// rule, and one test per error a tokenizer folder can carry (each message names the file and the key).
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "host/text/tokenizer.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

using namespace lrhost;
using nlohmann::json;
using text::Tokenizer;
using Ids = std::vector<std::int32_t>;

namespace {

// A byte-level BPE over a tiny alphabet: a b c 1 2 3, space (Ġ), newline (Ċ).
json base_tokenizer() {
  return {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", json::array({{{"id", 0},
                                     {"content", "<pad>"},
                                     {"single_word", false},
                                     {"lstrip", false},
                                     {"rstrip", false},
                                     {"normalized", false},
                                     {"special", true}},
                                    {{"id", 1},
                                     {"content", "<s>"},
                                     {"single_word", false},
                                     {"lstrip", false},
                                     {"rstrip", false},
                                     {"normalized", false},
                                     {"special", true}}})},
      {"normalizer", nullptr},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         json::array(
             {{{"type", "Digits"}, {"individual_digits", true}},
              {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}})}}},
      {"post_processor", nullptr},
      {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr},
        {"fuse_unk", false},
        {"byte_fallback", false},
        {"ignore_merges", false},
        {"vocab",
         {{"<pad>", 0},
          {"<s>", 1},
          {"a", 2},
          {"b", 3},
          {"c", 4},
          {"\u0120", 5},
          {"1", 6},
          {"2", 7},
          {"3", 8},
          {"ab", 9},
          {"abc", 10},
          {"\u0120a", 11},
          {"bc", 12},
          {"\u010a", 13},
          {"12", 14}}},
        {"merges", json::array({"a b", "ab c", "\u0120 a", "b c", "1 2"})}}},
  };
}

struct Folder {
  test::TempDir dir{"tokenizer"};
  Folder(const json& tokenizer, const json& config = nullptr) {
    write("tokenizer.json", tokenizer.dump());
    if (!config.is_null()) write("tokenizer_config.json", config.dump());
  }
  void write(const std::string& name, const std::string& content) const { std::ofstream(dir / name) << content; }
  Tokenizer load(text::PipelineSource source = text::PipelineSource::transformers) const {
    return Tokenizer::load(dir.path, source);
  }
};

}  // namespace

TEST_CASE("BPE merges by rank, lowest first") {
  Folder folder(base_tokenizer());
  auto tokenizer = folder.load();
  CHECK(tokenizer.encode("abc") == Ids{10});          // a b -> ab (rank 0), ab c -> abc (rank 1)
  CHECK(tokenizer.encode("a abc") == Ids{2, 5, 10});  // in "Ġabc", a b (rank 0) beats Ġ a (rank 2)
  CHECK(tokenizer.encode("") == Ids{});

  json reordered = base_tokenizer();  // b c first: "abc" -> a + bc, and no merge "a bc" exists
  reordered["model"]["merges"] =
      json::array({json::array({"b", "c"}), json::array({"a", "b"}), json::array({"ab", "c"})});
  Folder other(reordered);
  CHECK(other.load().encode("abc") == Ids{2, 12});
}

TEST_CASE("added tokens are split out first, leftmost-longest") {
  Folder folder(base_tokenizer());
  auto tokenizer = folder.load();
  CHECK(tokenizer.encode("ab<s>c") == Ids{9, 1, 4});
  CHECK(tokenizer.encode("<s><pad><s>") == Ids{1, 0, 1});
  CHECK(tokenizer.token_to_id("<s>") == 1);
}

TEST_CASE("Digits splits every digit before the ByteLevel regex; without it 12 merges") {
  Folder folder(base_tokenizer());
  CHECK(folder.load().encode("12 3") == Ids{6, 7, 5, 8});
  json plain = base_tokenizer();
  plain["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  Folder other(plain);
  CHECK(other.load().encode("12 3") == Ids{14, 5, 8});
  json prefixed = plain;  // add_prefix_space: "abc" is read as " abc"
  prefixed["pre_tokenizer"]["add_prefix_space"] = true;
  Folder third(prefixed);
  CHECK(third.load().encode("abc") == Ids{5, 10});
}

TEST_CASE("truncation and padding follow tokenizer_config.json's sides; options override them") {
  json config = {{"pad_token", "<pad>"},
                 {"truncation_side", "left"},
                 {"padding_side", "left"},
                 {"model_max_length", 3},
                 {"tokenizer_class", "PreTrainedTokenizerFast"}};
  Folder folder(base_tokenizer(), config);
  auto tokenizer = folder.load();
  CHECK(tokenizer.settings().pad_id == 0);
  std::vector<std::string> texts{"a b c", "ab"};  // a Ġ b Ġ c -> [2, 5, 3, 5, 4]; ab -> [9]
  text::BatchOptions options{.max_length = 3, .truncation = true, .padding = text::Padding::longest};
  auto left = tokenizer.encode_batch(texts, options);
  CHECK(left[0].ids == Ids{3, 5, 4});
  CHECK(left[1].ids == Ids{0, 0, 9});
  CHECK(left[1].attention_mask == Ids{0, 0, 1});

  options.truncation_side = text::Side::right;
  options.padding_side = text::Side::right;
  options.padding = text::Padding::max_length;
  options.max_length = 4;
  auto right = tokenizer.encode_batch(texts, options);
  CHECK(right[0].ids == Ids{2, 5, 3, 5});
  CHECK(right[0].attention_mask == Ids{1, 1, 1, 1});
  CHECK(right[1].ids == Ids{9, 0, 0, 0});
  CHECK(right[1].attention_mask == Ids{1, 0, 0, 0});

  // No max_length given: model_max_length (3) is the limit.
  auto defaulted = tokenizer.encode_batch({"a b c"}, {.truncation = true});
  CHECK(defaulted[0].ids == Ids{3, 5, 4});
}

TEST_CASE("decode maps byte-level tokens back to the text") {
  Folder folder(base_tokenizer());
  auto tokenizer = folder.load();
  for (std::string sample : {"a bc\n", "<s>abc 12\n\n", "  c"})
    CHECK(tokenizer.decode(tokenizer.encode(sample)) == sample);
  CHECK_THROWS_WITH_AS(tokenizer.decode({99}), doctest::Contains("id 99"), util::DataError);
}

TEST_CASE("tokenizer_class GPT2Tokenizer: transformers 5's own ByteLevel pipeline, unless the file is asked for") {
  Folder folder(base_tokenizer(), {{"tokenizer_class", "GPT2Tokenizer"}});
  CHECK(folder.load().encode("12") == Ids{14});  // no Digits split
  CHECK(folder.load(text::PipelineSource::file).encode("12") == Ids{6, 7});
  Folder unknown(base_tokenizer(), {{"tokenizer_class", "BertTokenizer"}});
  CHECK_THROWS_WITH_AS(unknown.load(), doctest::Contains("tokenizer_class = \"BertTokenizer\""), util::DataError);
}

// Every error names the file and the JSON key (and the value where there is one).
namespace {
void check_load_error(const json& tokenizer, const std::vector<std::string>& expected, const json& config = nullptr) {
  Folder folder(tokenizer, config);
  try {
    folder.load();
    FAIL("loading succeeded");
  } catch (const util::Error& error) {
    std::string message = error.what();
    for (const std::string& part : expected) CHECK_MESSAGE(message.find(part) != std::string::npos, message);
  }
}
}  // namespace

TEST_CASE("unsupported model type") {
  json file = base_tokenizer();
  file["model"]["type"] = "WordPiece";
  check_load_error(file, {"tokenizer.json", "model.type", "WordPiece"});
}

TEST_CASE("unsupported pre-tokenizer, also inside a Sequence") {
  json file = base_tokenizer();
  file["pre_tokenizer"]["pretokenizers"][1] = {{"type", "Whitespace"}};
  check_load_error(file, {"tokenizer.json", "pre_tokenizer.pretokenizers[1].type", "Whitespace"});
}

TEST_CASE("a normalizer other than NFC is an error") {
  json file = base_tokenizer();
  file["normalizer"] = {{"type", "Lowercase"}};
  check_load_error(file, {"tokenizer.json", "normalizer", "Lowercase"});
}

TEST_CASE("a merge or a character missing from the vocabulary") {
  json file = base_tokenizer();
  file["model"]["merges"].push_back("c 3");
  check_load_error(file, {"tokenizer.json", "model.merges", "merge #5", "'c3'"});
  Folder folder(base_tokenizer());
  CHECK_THROWS_WITH_AS(folder.load().encode("abz"), doctest::Contains("token 'z'"), util::DataError);
}

TEST_CASE("malformed JSON and missing files") {
  Folder folder(base_tokenizer());
  folder.write("tokenizer.json", "{\"model\": ");
  CHECK_THROWS_WITH_AS(folder.load(), doctest::Contains("tokenizer.json: malformed JSON"), util::DataError);
  folder.write("tokenizer.json", "{\"version\": 1e999999}");  // beyond double: out_of_range, not parse_error
  CHECK_THROWS_WITH_AS(folder.load(), doctest::Contains("tokenizer.json: malformed JSON"), util::DataError);
  folder.write("tokenizer.json", base_tokenizer().dump());
  folder.write("tokenizer_config.json", "[1, 2");
  CHECK_THROWS_WITH_AS(folder.load(), doctest::Contains("tokenizer_config.json: malformed JSON"), util::DataError);
  CHECK_THROWS_WITH_AS(Tokenizer::load(folder.dir / "absent"), doctest::Contains("absent does not exist"),
                       util::IoError);
  test::TempDir empty{"tokenizer_empty"};
  CHECK_THROWS_WITH_AS(Tokenizer::load(empty.path), doctest::Contains("tokenizer.json not found"), util::IoError);
}

TEST_CASE("flags and options that are not implemented are errors naming them") {
  json lstrip = base_tokenizer();
  lstrip["added_tokens"][1]["lstrip"] = true;
  check_load_error(lstrip, {"tokenizer.json", "added_tokens[1].lstrip", "<s>"});
  json dropout = base_tokenizer();
  dropout["model"]["dropout"] = 0.1;
  check_load_error(dropout, {"tokenizer.json", "model.dropout", "0.1"});
  json post = base_tokenizer();
  post["post_processor"] = {{"type", "TemplateProcessing"},
                            {"single", json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                                                    {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})}};
  check_load_error(post, {"tokenizer.json", "post_processor.single", "adds tokens"});
  check_load_error(base_tokenizer(), {"tokenizer_config.json", "add_bos_token"}, {{"add_bos_token", true}});
  check_load_error(base_tokenizer(), {"tokenizer_config.json", "pad_token", "<nope>"}, {{"pad_token", "<nope>"}});
  check_load_error(base_tokenizer(), {"tokenizer_config.json", "truncation_side", "middle"},
                   {{"truncation_side", "middle"}});
}

TEST_CASE("text that is not UTF-8, and padding without a pad token") {
  Folder folder(base_tokenizer());
  auto tokenizer = folder.load();
  CHECK_THROWS_WITH_AS(tokenizer.encode("ab\xff"), doctest::Contains("not valid UTF-8 (byte 2"), util::DataError);
  CHECK_THROWS_WITH_AS(tokenizer.encode_batch({"a", "abc c"}, {.padding = text::Padding::longest}),
                       doctest::Contains("pad_token"), util::ConfigError);
}
