// Unit tests of the byte-fallback family of host/text (Gemma, PaliGemma) on a tiny hand-written tokenizer.json:
// the ' ' -> '▁' normalizer with the whole text one BPE word, <0xXX> byte fallback, <unk> fusing (and tokenizers'
// order quirk), added tokens split before normalization, <bos> from the post-processor with truncation counting
// it, padding, GemmaTokenizer's defaults, decoding, and the errors a folder can carry (file and key named).
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "host/text/tokenizer.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

using namespace lrhost;
using nlohmann::json;
using text::Tokenizer;
using GemmaIds = std::vector<std::int32_t>;

namespace {

json gemma_added(int id, const char* content) {
  return {{"id", id},        {"content", content},  {"single_word", false}, {"lstrip", false},
          {"rstrip", false}, {"normalized", false}, {"special", true}};
}

// Specials at 0..4 as in Gemma; only four byte pieces (é's two bytes, tab, newline), so other unknown
// characters go to <unk>.
json gemma_tokenizer() {
  return {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", json::array({gemma_added(0, "<pad>"), gemma_added(1, "<eos>"), gemma_added(2, "<bos>"),
                                    gemma_added(3, "<unk>"), gemma_added(4, "<mask>")})},
      {"normalizer", {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}}},
      {"pre_tokenizer", nullptr},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", json::array({{{"SpecialToken", {{"id", "<bos>"}, {"type_id", 0}}}},
                                {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
        {"pair", json::array()},
        {"special_tokens", {{"<bos>", {{"id", "<bos>"}, {"ids", {2}}, {"tokens", {"<bos>"}}}}}}}},
      {"decoder",
       {{"type", "Sequence"},
        {"decoders", json::array({{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
                                  {{"type", "ByteFallback"}},
                                  {{"type", "Fuse"}}})}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", "<unk>"},
        {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr},
        {"fuse_unk", true},
        {"byte_fallback", true},
        {"ignore_merges", false},
        {"vocab",
         {{"<pad>", 0},
          {"<eos>", 1},
          {"<bos>", 2},
          {"<unk>", 3},
          {"<mask>", 4},
          {"<0xC3>", 5},
          {"<0xA9>", 6},
          {"<0x09>", 7},
          {"<0x0A>", 8},
          {"a", 9},
          {"b", 10},
          {"c", 11},
          {"\u2581", 12},
          {"ab", 13},
          {"\u2581a", 14},
          {"abc", 15},
          {"\u2581\u2581", 16}}},
        {"merges", json::array({"a b", "\u2581 a", "ab c", json::array({"\u2581", "\u2581"})})}}},
  };
}

json gemma_config() {
  return {{"tokenizer_class", "GemmaTokenizer"}, {"padding_side", "right"}};
}

struct GemmaFolder {
  test::TempDir dir{"gemma_tokenizer"};
  GemmaFolder(const json& tokenizer, const json& config = gemma_config()) {
    std::ofstream(dir / "tokenizer.json") << tokenizer.dump();
    if (!config.is_null()) std::ofstream(dir / "tokenizer_config.json") << config.dump();
  }
  Tokenizer load(text::PipelineSource source = text::PipelineSource::transformers) const {
    return Tokenizer::load(dir.path, source);
  }
};

void check_gemma_error(const json& tokenizer, const json& config, std::initializer_list<const char*> parts,
                       text::PipelineSource source = text::PipelineSource::transformers) {
  GemmaFolder folder(tokenizer, config);
  try {
    folder.load(source);
    FAIL("loading should fail");
  } catch (const util::DataError& error) {
    for (const char* part : parts)
      CHECK_MESSAGE(std::string(error.what()).find(part) != std::string::npos, error.what());
  }
}

}  // namespace

TEST_CASE("gemma: spaces become '\u2581', the whole text is one BPE word, merges by rank") {
  GemmaFolder folder(gemma_tokenizer());
  auto tokenizer = folder.load();
  CHECK(tokenizer.family() == text::Family::byte_fallback);
  CHECK(tokenizer.encode("abc") == GemmaIds{15});           // a b -> ab, ab c -> abc
  CHECK(tokenizer.encode("ab c") == GemmaIds{13, 12, 11});  // no dummy prefix; "ab▁c": ▁ c has no merge
  CHECK(tokenizer.encode(" a") == GemmaIds{14});            // ▁ a -> ▁a
  CHECK(tokenizer.encode("  a") == GemmaIds{12, 14});       // ▁ a (rank 1) before ▁ ▁ (rank 3)
  CHECK(tokenizer.encode("  ") == GemmaIds{16});
  CHECK(tokenizer.encode("") == GemmaIds{});
  // The same file run as it is: same normalizer, so same ids.
  CHECK(folder.load(text::PipelineSource::file).encode("ab c") == GemmaIds{13, 12, 11});
}

TEST_CASE("gemma: byte fallback, then <unk>, fused") {
  GemmaFolder folder(gemma_tokenizer());
  auto tokenizer = folder.load();
  CHECK(tokenizer.encode("\xC3\xA9") == GemmaIds{5, 6});       // é -> <0xC3><0xA9>
  CHECK(tokenizer.encode("a\tb\n") == GemmaIds{9, 7, 10, 8});  // tab and newline are byte pieces
  CHECK(tokenizer.encode("\xE2\x82\xAC") == GemmaIds{3});      // € has no byte pieces: <unk>
  CHECK(tokenizer.encode("\xE2\x82\xACxyz") == GemmaIds{3});   // consecutive unknowns fuse
  CHECK(tokenizer.encode("x a y") == GemmaIds{3, 14, 12, 3});
  // Hugging Face emits a pending <unk> only at the next vocabulary character or the end, after byte pieces.
  CHECK(tokenizer.encode("x\xC3\xA9") == GemmaIds{5, 6, 3});
  CHECK(tokenizer.decode({2, 13, 12, 5, 6, 3}) == "<bos>ab \xC3\xA9<unk>");
}

TEST_CASE("gemma: added tokens are matched in the raw text, before the normalizer") {
  GemmaFolder folder(gemma_tokenizer());
  auto tokenizer = folder.load();
  CHECK(tokenizer.encode("<bos>ab<eos> a\n") == GemmaIds{2, 13, 1, 14, 8});
  CHECK(tokenizer.encode("<pad><pad>") == GemmaIds{0, 0});
  CHECK(tokenizer.encode("<bos") == GemmaIds{3, 10, 3});  // not a token: '<' and "os" are unknown
}

TEST_CASE("gemma: <bos> first, truncation counts it, right padding with <pad>") {
  GemmaFolder folder(gemma_tokenizer());
  auto tokenizer = folder.load();
  CHECK(tokenizer.prefix_ids() == GemmaIds{2});
  auto batch = tokenizer.encode_batch({"ab c", "abc", "ab c ab"},
                                      {.max_length = 4, .truncation = true, .padding = text::Padding::max_length});
  CHECK(batch[0].ids == GemmaIds{2, 13, 12, 11});
  CHECK(batch[1].ids == GemmaIds{2, 15, 0, 0});
  CHECK(batch[1].attention_mask == GemmaIds{1, 1, 0, 0});
  CHECK(batch[2].ids == GemmaIds{2, 13, 12, 11});  // the tail is cut, <bos> kept
  CHECK(tokenizer.encode_batch({"abc"}, {.max_length = 1, .truncation = true})[0].ids == GemmaIds{2});
  CHECK_THROWS_WITH_AS(tokenizer.encode_batch({"abc"}, {.max_length = 0, .truncation = true}),
                       doctest::Contains("max_length"), util::ConfigError);
}

TEST_CASE("gemma: GemmaTokenizer's defaults and the rebuilt post-processor") {
  // No padding_side in the config: the class's "left"; pad defaults to <pad>.
  GemmaFolder left(gemma_tokenizer(), {{"tokenizer_class", "GemmaTokenizer"}});
  auto batch = left.load().encode_batch({"abc"}, {.max_length = 3, .padding = text::Padding::max_length});
  CHECK(batch[0].ids == GemmaIds{0, 2, 15});
  // add_bos_token/add_eos_token given: transformers rebuilds "<bos> $A <eos>" from them.
  GemmaFolder both(gemma_tokenizer(),
                   {{"tokenizer_class", "GemmaTokenizer"}, {"add_bos_token", true}, {"add_eos_token", true}});
  CHECK(both.load().encode_batch({"abc"}, {})[0].ids == GemmaIds{2, 15, 1});
  GemmaFolder none(gemma_tokenizer(), {{"tokenizer_class", "GemmaTokenizer"}, {"add_bos_token", false}});
  CHECK(none.load().encode_batch({"abc"}, {})[0].ids == GemmaIds{15});
  // The class installs the normalizer: a file without one still gets it through transformers.
  json bare = gemma_tokenizer();
  bare["normalizer"] = nullptr;
  GemmaFolder rebuilt(bare);
  CHECK(rebuilt.load().encode("ab c") == GemmaIds{13, 12, 11});
  check_gemma_error(bare, gemma_config(), {"tokenizer.json", "normalizer"}, text::PipelineSource::file);
}

TEST_CASE("gemma: bad files are errors naming the file and the key") {
  json metaspace = gemma_tokenizer();
  metaspace["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "\u2581"}};
  check_gemma_error(metaspace, nullptr, {"tokenizer.json", "pre_tokenizer", "Metaspace"});
  json vocab = gemma_tokenizer();
  vocab["model"]["vocab"] = json::array();
  check_gemma_error(vocab, gemma_config(), {"tokenizer.json", "model.vocab", "expected an object"});
  json merge = gemma_tokenizer();
  merge["model"]["merges"][1] = 7;
  check_gemma_error(merge, gemma_config(), {"tokenizer.json", "model.merges[1]"});
  json no_model = gemma_tokenizer();
  no_model.erase("model");
  check_gemma_error(no_model, gemma_config(), {"tokenizer.json", "model", "missing"});
  json template_entry = gemma_tokenizer();
  template_entry["post_processor"]["special_tokens"].erase("<bos>");
  check_gemma_error(template_entry, gemma_config(), {"tokenizer.json", "post_processor.special_tokens", "<bos>"});
  json ids = gemma_tokenizer();
  ids["post_processor"]["special_tokens"]["<bos>"]["ids"] = "2";
  check_gemma_error(ids, gemma_config(), {"tokenizer.json", "post_processor.special_tokens[\"<bos>\"].ids"});
  check_gemma_error(gemma_tokenizer(), {{"tokenizer_class", "GemmaTokenizer"}, {"add_bos_token", "yes"}},
                    {"tokenizer_config.json", "add_bos_token"});
  check_gemma_error(gemma_tokenizer(), {{"tokenizer_class", "GemmaTokenizer"}, {"pad_token", {{"content", 5}}}},
                    {"tokenizer_config.json", "pad_token"});
  json unk = gemma_tokenizer();
  unk["model"]["unk_token"] = 3;
  check_gemma_error(unk, nullptr, {"tokenizer.json", "model.unk_token"});
}
