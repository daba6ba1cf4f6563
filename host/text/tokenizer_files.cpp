// Tokenizer::load: reads tokenizer.json and tokenizer_config.json, checks every setting against what this
// module implements, and assembles the pipeline. An unsupported value is an error naming the file, the JSON
// path and the value. See tokenizer.hpp for the two pipeline sources.
#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "host/text/tokenizer.hpp"
#include "host/util/error.hpp"

namespace lrhost::text {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Reads and checks one JSON file, naming it in every error.
class JsonFile {
 public:
  JsonFile(fs::path path, json root) : path_(std::move(path)), root_(std::move(root)) {}
  static JsonFile read(const fs::path& path) {
    std::ifstream stream(path, std::ios::binary);
    if (!stream) throw util::IoError(fmt::format("cannot read {}", path.string()));
    std::stringstream text;
    text << stream.rdbuf();
    try {
      return JsonFile(path, json::parse(text.str()));
    } catch (const json::parse_error& error) {
      throw util::DataError(fmt::format("{}: malformed JSON: {}", path.string(), error.what()));
    }
  }
  const json& root() const { return root_; }
  const fs::path& path() const { return path_; }

  [[noreturn]] void fail(const std::string& key, const json& value, const std::string& why,
                         const std::string& hint = {}) const {
    std::string shown = value.dump();
    if (shown.size() > 120) shown = shown.substr(0, 117) + "...";
    throw util::DataError(fmt::format("{}: {} = {}: {}", path_.string(), key, shown, why), hint);
  }
  [[noreturn]] void missing(const std::string& key, const std::string& expected) const {
    throw util::DataError(fmt::format("{}: {} is missing (expected {})", path_.string(), key, expected));
  }
  // The member `name` of `object` (at `key`), checked to be of the expected kind.
  const json& member(const json& object, const std::string& key, const char* name) const {
    if (!object.is_object()) fail(key, object, "expected an object");
    auto found = object.find(name);
    if (found == object.end()) missing(key + "." + name, "a value");
    return *found;
  }
  std::string string_at(const json& object, const std::string& key, const char* name) const {
    const json& value = member(object, key, name);
    if (!value.is_string()) fail(key + "." + name, value, "expected a string");
    return value.get<std::string>();
  }
  bool bool_at(const json& object, const std::string& key, const char* name, std::optional<bool> fallback = {}) const {
    if (fallback && (!object.contains(name) || object[name].is_null())) return *fallback;
    const json& value = member(object, key, name);
    if (!value.is_boolean()) fail(key + "." + name, value, "expected true or false");
    return value.get<bool>();
  }

 private:
  fs::path path_;
  json root_;
};

const char* supported_pre_tokenizers = "supported: ByteLevel, Digits, Split (Regex, Isolated), Sequence of these";

void add_pre_tokenizer(const JsonFile& file, const json& node, const std::string& key, PreTokenizer& out) {
  std::string type = file.string_at(node, key, "type");
  if (type == "Sequence") {
    const json& steps = file.member(node, key, "pretokenizers");
    if (!steps.is_array()) file.fail(key + ".pretokenizers", steps, "expected an array");
    for (std::size_t i = 0; i < steps.size(); ++i)
      add_pre_tokenizer(file, steps[i], fmt::format("{}.pretokenizers[{}]", key, i), out);
  } else if (type == "Digits") {
    out.add_digits(file.bool_at(node, key, "individual_digits", false));
  } else if (type == "ByteLevel") {
    out.add_byte_level(file.bool_at(node, key, "add_prefix_space", true), file.bool_at(node, key, "use_regex", true));
  } else if (type == "Split") {
    const json& pattern = file.member(node, key, "pattern");
    if (!pattern.is_object() || !pattern.contains("Regex") || !pattern["Regex"].is_string())
      file.fail(key + ".pattern", pattern, "unsupported Split pattern (supported: {\"Regex\": \"...\"})");
    std::string behavior = file.string_at(node, key, "behavior");
    if (behavior != "Isolated")
      file.fail(key + ".behavior", behavior, "unsupported Split behavior (supported: Isolated)");
    if (file.bool_at(node, key, "invert", false)) file.fail(key + ".invert", true, "unsupported (supported: false)");
    try {
      out.add_split(pattern["Regex"].get<std::string>());
    } catch (const std::invalid_argument& error) {
      file.fail(key + ".pattern.Regex", pattern["Regex"], std::string("the regex does not compile: ") + error.what());
    }
  } else {
    file.fail(key + ".type", type, std::string("unsupported pre-tokenizer (") + supported_pre_tokenizers + ")");
  }
}

// Post-processors that add no tokens: ByteLevel (offsets only), TemplateProcessing whose single template
// is just the sequence, and Sequences of these.
void check_post_processor(const JsonFile& file, const json& node, const std::string& key) {
  if (node.is_null()) return;
  std::string type = file.string_at(node, key, "type");
  if (type == "ByteLevel") return;
  if (type == "Sequence") {
    const json& steps = file.member(node, key, "processors");
    if (!steps.is_array()) file.fail(key + ".processors", steps, "expected an array");
    for (std::size_t i = 0; i < steps.size(); ++i)
      check_post_processor(file, steps[i], fmt::format("{}.processors[{}]", key, i));
    return;
  }
  if (type == "TemplateProcessing") {
    const json& single = file.member(node, key, "single");
    bool plain = single.is_array() && single.size() == 1 && single[0].contains("Sequence") &&
                 single[0]["Sequence"].value("id", std::string()) == "A";
    if (plain) return;
    file.fail(key + ".single", single, "a post-processor that adds tokens is not supported (lrhost adds none)");
  }
  file.fail(key + ".type", type,
            "unsupported post-processor (supported: ByteLevel, TemplateProcessing adding no tokens)");
}

void check_decoder(const JsonFile& file, const json& node, const std::string& key, bool& byte_level) {
  byte_level = false;
  if (node.is_null()) return;
  std::string type = file.string_at(node, key, "type");
  if (type == "ByteLevel") {
    byte_level = true;
    return;
  }
  file.fail(key + ".type", type, "unsupported decoder (supported: ByteLevel)");
}

void check_normalizer(const JsonFile& file, const json& node) {
  if (node.is_null()) return;
  if (node.is_object() && node.value("type", std::string()) == "Sequence" && node.contains("normalizers") &&
      node["normalizers"].is_array() && node["normalizers"].empty())
    return;
  file.fail("normalizer", node, "normalizers are not supported (byte-level BPE tokenizers have none)");
}

// `gpt2_rebuild`: transformers' GPT2Tokenizer builds its own BPE from vocab and merges, without ignore_merges.
std::shared_ptr<const BpeModel> read_model(const JsonFile& file, const json& model, bool gpt2_rebuild) {
  if (!model.is_object()) file.fail("model", model, "expected an object");
  if (!model.contains("type")) file.missing("model.type", "\"BPE\"");
  std::string type = file.string_at(model, "model", "type");
  if (type != "BPE") file.fail("model.type", type, "unsupported model (supported: BPE, byte-level)");
  if (model.contains("dropout") && !model["dropout"].is_null() && model["dropout"] != 0.0 && model["dropout"] != 1.0)
    file.fail("model.dropout", model["dropout"], "BPE dropout is not supported (expected null)");
  for (const char* name : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (model.contains(name) && !model[name].is_null() && model[name] != "")
      file.fail(std::string("model.") + name, model[name], "not supported by byte-level BPE (expected null)");
  if (file.bool_at(model, "model", "byte_fallback", false))
    file.fail("model.byte_fallback", true, "byte fallback is not supported (expected false)");
  bool ignore_merges = file.bool_at(model, "model", "ignore_merges", false) && !gpt2_rebuild;

  const json& vocab_json = file.member(model, "model", "vocab");
  if (!vocab_json.is_object()) file.fail("model.vocab", vocab_json, "expected an object {token: id}");
  std::unordered_map<std::string, std::int32_t> vocab;
  vocab.reserve(vocab_json.size());
  for (auto it = vocab_json.begin(); it != vocab_json.end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<std::int64_t>() < 0 ||
        it.value().get<std::int64_t>() > INT32_MAX)
      file.fail("model.vocab[\"" + it.key() + "\"]", it.value(), "expected a non-negative integer id");
    vocab.emplace(it.key(), it.value().get<std::int32_t>());
  }

  const json& merges_json = file.member(model, "model", "merges");
  if (!merges_json.is_array()) file.fail("model.merges", merges_json, "expected an array");
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(merges_json.size());
  for (std::size_t i = 0; i < merges_json.size(); ++i) {
    const json& merge = merges_json[i];
    std::string key = fmt::format("model.merges[{}]", i);
    if (merge.is_string()) {
      const std::string& text = merge.get_ref<const std::string&>();
      auto space = text.find(' ');
      if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos)
        file.fail(key, merge, "expected \"left right\" (two tokens and one space)");
      merges.emplace_back(text.substr(0, space), text.substr(space + 1));
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
      merges.emplace_back(merge[0].get<std::string>(), merge[1].get<std::string>());
    } else {
      file.fail(key, merge, "expected \"left right\" or [\"left\", \"right\"]");
    }
  }
  try {
    return std::make_shared<const BpeModel>(std::move(vocab), merges, ignore_merges);
  } catch (const std::invalid_argument& error) {
    throw util::DataError(fmt::format("{}: model.merges: {}", file.path().string(), error.what()));
  }
}

AddedVocabulary read_added_tokens(const JsonFile& file, const json& list) {
  AddedVocabulary added;
  if (list.is_null()) return added;
  if (!list.is_array()) file.fail("added_tokens", list, "expected an array");
  for (std::size_t i = 0; i < list.size(); ++i) {
    std::string key = fmt::format("added_tokens[{}]", i);
    const json& node = list[i];
    AddedToken token;
    const json& id = file.member(node, key, "id");
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0)
      file.fail(key + ".id", id, "expected a non-negative integer");
    token.id = id.get<std::int32_t>();
    token.content = file.string_at(node, key, "content");
    token.special = file.bool_at(node, key, "special", false);
    token.normalized = file.bool_at(node, key, "normalized", !token.special);
    for (const char* flag : {"lstrip", "rstrip", "single_word"})
      if (file.bool_at(node, key, flag, false))
        file.fail(key + "." + flag, true,
                  fmt::format("added token '{}': {} is not supported (expected false)", token.content, flag));
    added.add(std::move(token));
  }
  return added;
}

std::optional<std::string> token_content(const JsonFile& file, const std::string& key, const json& value) {
  if (value.is_null()) return std::nullopt;
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.contains("content") && value["content"].is_string())
    return value["content"].get<std::string>();
  file.fail(key, value, "expected a token string or {\"content\": ...}");
}

Side read_side(const JsonFile& file, const json& config, const char* name) {
  if (!config.contains(name) || config[name].is_null()) return Side::right;
  const json& value = config[name];
  if (value == "left") return Side::left;
  if (value == "right") return Side::right;
  file.fail(name, value, "expected \"left\" or \"right\"");
}

TokenizerSettings read_settings(const fs::path& folder) {
  TokenizerSettings settings;
  fs::path path = folder / "tokenizer_config.json";
  std::error_code error;
  if (!fs::exists(path, error)) return settings;
  JsonFile file = JsonFile::read(path);
  const json& config = file.root();
  if (!config.is_object()) file.fail("(top level)", config, "expected an object");
  if (config.contains("tokenizer_class") && !config["tokenizer_class"].is_null())
    settings.tokenizer_class = file.string_at(config, "(top level)", "tokenizer_class");
  if (config.contains("pad_token")) settings.pad_token = token_content(file, "pad_token", config["pad_token"]);
  settings.truncation_side = read_side(file, config, "truncation_side");
  settings.padding_side = read_side(file, config, "padding_side");
  if (config.contains("model_max_length") && config["model_max_length"].is_number()) {
    double length = config["model_max_length"].get<double>();
    // transformers writes int(1e30) for "no limit".
    if (length >= 1 && length < 1e12) settings.model_max_length = static_cast<std::int64_t>(length);
  }
  settings.add_prefix_space = file.bool_at(config, "(top level)", "add_prefix_space", false);
  // transformers 5 rebuilds the post-processor from these; a BOS/EOS it would add is not supported.
  for (const char* flag : {"add_bos_token", "add_eos_token"})
    if (file.bool_at(config, "(top level)", flag, false))
      file.fail(flag, true, "adding BOS/EOS tokens is not supported (transformers would add them; lrhost adds none)");
  return settings;
}

}  // namespace

Tokenizer Tokenizer::load(const fs::path& folder, PipelineSource source) {
  std::error_code error;
  if (!fs::is_directory(folder, error))
    throw util::IoError(fmt::format("tokenizer folder {} does not exist or is not a folder", folder.string()),
                        "give the folder that holds tokenizer.json (and tokenizer_config.json)");
  fs::path json_path = folder / "tokenizer.json";
  if (!fs::is_regular_file(json_path, error))
    throw util::IoError(fmt::format("{} not found", json_path.string()),
                        "lrhost reads Hugging Face tokenizer.json files (the fast-tokenizer format)");
  Parts parts;
  parts.folder = folder;
  parts.settings = read_settings(folder);

  JsonFile file = JsonFile::read(json_path);
  const json& root = file.root();
  if (!root.is_object()) file.fail("(top level)", root, "expected an object");

  // Which pipeline: transformers 5 keeps tokenizer.json's own for TokenizersBackend / PreTrainedTokenizerFast
  // (and a missing class); GPT2Tokenizer has its own __init__, which installs a plain ByteLevel pre-tokenizer
  // and decoder and drops the normalizer (transformers tokenization_utils_tokenizers.py,
  // convert_to_native_format; models/gpt2/tokenization_gpt2.py).
  std::string tokenizer_class = parts.settings.tokenizer_class;
  if (tokenizer_class.size() > 4 && tokenizer_class.ends_with("Fast") && tokenizer_class != "PreTrainedTokenizerFast")
    tokenizer_class.resize(tokenizer_class.size() - 4);
  auto pre_tokenizer = std::make_shared<PreTokenizer>();
  bool gpt2_rebuild = source == PipelineSource::transformers && tokenizer_class == "GPT2Tokenizer";
  if (gpt2_rebuild) {
    pre_tokenizer->add_byte_level(parts.settings.add_prefix_space, true);
    parts.byte_level_decoder = true;
    parts.pipeline_note = "tokenizer_class GPT2Tokenizer: transformers 5 replaces tokenizer.json's pre-tokenizer";
  } else {
    bool known = tokenizer_class.empty() || tokenizer_class == "PreTrainedTokenizerFast" ||
                 tokenizer_class == "TokenizersBackend";
    if (source == PipelineSource::transformers && !known)
      throw util::DataError(
          fmt::format("{}: tokenizer_class = \"{}\": unsupported (transformers 5 may rebuild this tokenizer's "
                      "pipeline in code; lrhost knows PreTrainedTokenizerFast, TokenizersBackend, GPT2Tokenizer)",
                      (folder / "tokenizer_config.json").string(), parts.settings.tokenizer_class),
          "use PipelineSource::file (lrhost tokenize --pipeline file) to run tokenizer.json as it is");
    check_normalizer(file, root.value("normalizer", json()));
    const json& pre = root.value("pre_tokenizer", json());
    if (!pre.is_null()) add_pre_tokenizer(file, pre, "pre_tokenizer", *pre_tokenizer);
    check_decoder(file, root.value("decoder", json()), "decoder", parts.byte_level_decoder);
  }
  parts.pre_tokenizer = std::move(pre_tokenizer);
  parts.model = read_model(file, file.member(root, "(top level)", "model"), gpt2_rebuild);
  parts.added = read_added_tokens(file, root.value("added_tokens", json()));
  check_post_processor(file, root.value("post_processor", json()), "post_processor");

  if (parts.settings.pad_token) {
    const std::string& pad = *parts.settings.pad_token;
    if (auto id = parts.added.id_of(pad))
      parts.settings.pad_id = *id;
    else if (auto found = parts.model->vocab().find(pad); found != parts.model->vocab().end())
      parts.settings.pad_id = found->second;
    else
      throw util::DataError(fmt::format("{}: pad_token = \"{}\" is neither an added token nor in the vocabulary of {}",
                                        (folder / "tokenizer_config.json").string(), pad, json_path.string()));
  }
  return Tokenizer(std::move(parts));
}

}  // namespace lrhost::text
