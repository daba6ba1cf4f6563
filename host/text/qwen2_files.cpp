// Qwen2Tokenizer's rebuilt pipeline; see qwen2_files.hpp.
#include "host/text/qwen2_files.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "host/text/nfc.hpp"
#include "host/util/error.hpp"

namespace lrhost::text::detail {
namespace {

namespace fs = std::filesystem;

// The added tokens being registered, as tokenizers' AddedVocabulary::add_tokens assigns their ids.
class Registry {
 public:
  explicit Registry(const BpeModel& model) : model_(model) {}

  void add(AddedToken token) {
    if (token.content.empty()) return;
    auto found = std::find_if(tokens_.begin(), tokens_.end(),
                              [&](const AddedToken& existing) { return existing.content == token.content; });
    if (found != tokens_.end()) {
      // The same content keeps its id; tokenizers replaces the token when any flag differs.
      found->special = token.special;
      found->normalized = token.normalized;
      return;
    }
    if (auto in_vocab = model_.vocab().find(token.content); in_vocab != model_.vocab().end()) {
      token.id = in_vocab->second;
    } else {
      auto vocab_size = static_cast<std::int32_t>(model_.vocab().size());
      std::optional<std::int32_t> largest;
      for (const AddedToken& existing : tokens_) largest = std::max(largest.value_or(existing.id), existing.id);
      token.id = !largest ? vocab_size : (*largest >= vocab_size || vocab_size == 0 ? *largest + 1 : vocab_size);
    }
    tokens_.push_back(std::move(token));
  }
  bool has(const std::string& content) const {
    return std::any_of(tokens_.begin(), tokens_.end(), [&](const AddedToken& t) { return t.content == content; });
  }
  AddedVocabulary finish() && {
    AddedVocabulary added;
    for (AddedToken& token : tokens_) {
      if (token.normalized) append_nfc(token.pattern, token.content);
      added.add(std::move(token));
    }
    return added;
  }

 private:
  const BpeModel& model_;
  std::vector<AddedToken> tokens_;
};

AddedToken special_token(std::string content) {
  AddedToken token;
  token.content = std::move(content);
  token.special = true;  // AddedToken(content, special=True): normalized defaults to not special
  return token;
}

// One serialized AddedToken ({"content", "special", "normalized", "lstrip", ...}) at `key` of `file`.
AddedToken read_token(const JsonFile& file, const json& node, const std::string& key) {
  AddedToken token;
  token.content = file.string_at(node, key, "content");
  token.special = file.bool_at(node, key, "special", false);
  token.normalized = file.bool_at(node, key, "normalized", !token.special);
  for (const char* flag : {"lstrip", "rstrip", "single_word"})
    if (file.bool_at(node, key, flag, false))
      file.fail(key + "." + flag, true,
                fmt::format("added token '{}': {} is not supported (expected false)", token.content, flag));
  return token;
}

std::optional<std::string> token_string(const JsonFile& file, const json& value, const std::string& key) {
  if (value.is_null()) return std::nullopt;
  if (value.is_string()) return value.get<std::string>();
  return file.string_at(value, key, "content");
}

}  // namespace

void apply_qwen2_defaults(TokenizerSettings& settings) {
  for (auto [name, token] : {std::pair{"unk_token", &settings.unk_token}, std::pair{"eos_token", &settings.eos_token},
                             std::pair{"pad_token", &settings.pad_token}})
    if (!settings.keys.count(name)) *token = "<|endoftext|>";
}

void add_qwen2_pre_tokenizer(bool add_prefix_space, PreTokenizer& pre_tokenizer) {
  pre_tokenizer.add_split(qwen2_split_pattern);
  pre_tokenizer.add_byte_level(add_prefix_space, false);
}

void check_qwen2_files(const JsonFile& tokenizer_json, const fs::path& config_path) {
  for (const char* name : {"padding", "truncation"}) {
    const json& value = tokenizer_json.root().value(name, json());
    if (!value.is_null())
      tokenizer_json.fail(name, value,
                          "not supported for Qwen2Tokenizer (transformers would make it the default of every call); "
                          "expected null");
  }
  std::error_code error;
  if (!fs::exists(config_path, error)) return;
  JsonFile config = JsonFile::read(config_path);
  for (const char* name : {"split_special_tokens", "fix_mistral_regex"})
    if (config.bool_at(config.root(), "(top level)", name, false))
      config.fail(name, true, "not supported (transformers would tokenize differently); expected false");
}

AddedVocabulary read_qwen2_added_tokens(const JsonFile& tokenizer_json, const fs::path& config_path,
                                        const TokenizerSettings& settings, const BpeModel& model) {
  Registry registry(model);
  std::optional<JsonFile> config;
  std::error_code error;
  if (fs::exists(config_path, error)) config = JsonFile::read(config_path);

  // 1. The saved added tokens, by id (tokenization_utils_base.py, _from_pretrained).
  std::map<std::int64_t, AddedToken> saved;
  if (config && config->root().contains("added_tokens_decoder")) {
    const json& table = config->root()["added_tokens_decoder"];
    if (!table.is_object()) config->fail("added_tokens_decoder", table, "expected an object {id: token}");
    for (auto it = table.begin(); it != table.end(); ++it) {
      std::string key = "added_tokens_decoder[\"" + it.key() + "\"]";
      std::int64_t id = 0;
      try {
        id = std::stoll(it.key());
      } catch (const std::exception&) {
        config->fail(key, it.key(), "expected an integer id as the key");
      }
      saved[id] = read_token(*config, it.value(), key);
    }
  } else {
    const json& list = tokenizer_json.root().value("added_tokens", json());
    if (!list.is_null() && !list.is_array()) tokenizer_json.fail("added_tokens", list, "expected an array");
    for (std::size_t i = 0; list.is_array() && i < list.size(); ++i) {
      std::string key = fmt::format("added_tokens[{}]", i);
      const json& id = tokenizer_json.member(list[i], key, "id");
      if (!id.is_number_integer()) tokenizer_json.fail(key + ".id", id, "expected an integer");
      saved[id.get<std::int64_t>()] = read_token(tokenizer_json, list[i], key);
    }
  }
  for (auto& [id, token] : saved) registry.add(token);

  // 2. Named special tokens (SPECIAL_TOKENS_ATTRIBUTES order) and extra special tokens not yet added.
  std::vector<std::string> specials;
  auto named = [&](const char* name, const std::optional<std::string>& from_settings) {
    std::optional<std::string> value = from_settings;
    if (!value && config && config->root().contains(name)) value = token_string(*config, config->root()[name], name);
    if (value && std::find(specials.begin(), specials.end(), *value) == specials.end()) specials.push_back(*value);
  };
  named("bos_token", settings.bos_token);
  named("eos_token", settings.eos_token);
  named("unk_token", settings.unk_token);
  named("sep_token", std::nullopt);
  named("pad_token", settings.pad_token);
  named("cls_token", std::nullopt);
  named("mask_token", settings.mask_token);
  if (config) {
    const json& root = config->root();
    const char* name = root.contains("extra_special_tokens") ? "extra_special_tokens" : "additional_special_tokens";
    const json& extra = root.value(name, json());
    if (!extra.is_null() && !extra.is_array() && !extra.is_object())
      config->fail(name, extra, "expected a list of tokens (or an object of named tokens)");
    for (auto it = extra.begin(); !extra.is_null() && it != extra.end(); ++it)
      if (auto token = token_string(*config, *it, std::string(name) + "[]"))
        if (std::find(specials.begin(), specials.end(), *token) == specials.end()) specials.push_back(*token);
  }
  for (const std::string& token : specials)
    if (!registry.has(token)) registry.add(special_token(token));

  // 3. Qwen2Tokenizer.__init__'s last line: add_tokens(AddedToken(t, special=True) for all_special_tokens).
  for (const std::string& token : specials) registry.add(special_token(token));
  return std::move(registry).finish();
}

}  // namespace lrhost::text::detail
