// Tokenizer::load: reads tokenizer.json and tokenizer_config.json, checks every setting against what this
// module implements, and assembles the pipeline. An unsupported value is an error naming the file, the JSON
// path and the value. See tokenizer.hpp for the two pipeline sources.
#include <fmt/format.h>

#include "host/text/byte_fallback.hpp"
#include "host/text/byte_fallback_files.hpp"
#include "host/text/json_file.hpp"
#include "host/text/nfc.hpp"
#include "host/text/qwen2_files.hpp"
#include "host/text/tokenizer.hpp"
#include "host/util/error.hpp"

namespace lrhost::text {
namespace {

using detail::json;
using detail::JsonFile;
namespace fs = std::filesystem;

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

// A byte-level tokenizer.json's normalizer: none, NFC (Qwen2's), or a Sequence of at most one NFC. Returns whether
// it is NFC.
bool read_normalizer(const JsonFile& file, const json& node) {
  if (node.is_null()) return false;
  if (node.is_object() && node.value("type", std::string()) == "NFC") return true;
  if (node.is_object() && node.value("type", std::string()) == "Sequence" && node.contains("normalizers") &&
      node["normalizers"].is_array() && node["normalizers"].size() <= 1)
    return !node["normalizers"].empty() && read_normalizer(file, node["normalizers"][0]);
  file.fail("normalizer", node, "unsupported normalizer for byte-level BPE (supported: none, NFC)");
}

// How the model's options are chosen. from_file: the file's own flags (ignore_merges; byte_fallback, fuse_unk,
// unk_token). The rebuilds are transformers classes with their own __init__, which build BPE from vocab and
// merges alone: GPT2Tokenizer with no options, GemmaTokenizer with byte_fallback, fuse_unk and the config's
// unk_token (models/gemma/tokenization_gemma.py), Qwen2Tokenizer with no options either and without looking at
// the file's (models/qwen2/tokenization_qwen2.py: no dropout, unk, prefix or suffix, ignore_merges false).
enum class ModelRule { from_file, gpt2_rebuild, gemma_rebuild, qwen2_rebuild };

std::shared_ptr<const BpeModel> read_model(const JsonFile& file, const json& model, ModelRule rule,
                                           const std::string& rebuild_unk_token) {
  if (!model.is_object()) file.fail("model", model, "expected an object");
  if (!model.contains("type")) file.missing("model.type", "\"BPE\"");
  std::string type = file.string_at(model, "model", "type");
  if (type != "BPE") file.fail("model.type", type, "unsupported model (supported: BPE)");
  BpeOptions options;
  std::optional<std::string> unk_token;
  if (rule == ModelRule::gemma_rebuild) {
    options.byte_fallback = options.fuse_unk = true;
    unk_token = rebuild_unk_token;
  } else if (rule != ModelRule::qwen2_rebuild) {
    if (model.contains("dropout") && !model["dropout"].is_null() && model["dropout"] != 0.0 && model["dropout"] != 1.0)
      file.fail("model.dropout", model["dropout"], "BPE dropout is not supported (expected null)");
    for (const char* name : {"continuing_subword_prefix", "end_of_word_suffix"})
      if (model.contains(name) && !model[name].is_null() && model[name] != "")
        file.fail(std::string("model.") + name, model[name], "not supported (expected null)");
    options.ignore_merges = file.bool_at(model, "model", "ignore_merges", false) && rule == ModelRule::from_file;
    if (rule == ModelRule::from_file) {
      options.byte_fallback = file.bool_at(model, "model", "byte_fallback", false);
      options.fuse_unk = file.bool_at(model, "model", "fuse_unk", false);
      if (model.contains("unk_token") && !model["unk_token"].is_null())
        unk_token = file.string_at(model, "model", "unk_token");
    }
  }

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
  if (unk_token) {
    // Hugging Face checks this only when an unknown character comes; without the id such text is an error.
    if (auto found = vocab.find(*unk_token); found != vocab.end()) options.unk_id = found->second;
  }
  try {
    return std::make_shared<const BpeModel>(std::move(vocab), merges, options);
  } catch (const std::invalid_argument& error) {
    throw util::DataError(fmt::format("{}: model.merges: {}", file.path().string(), error.what()));
  }
}

// The normalizer that runs before normalized=true tokens are searched for, so that they are searched for in their
// normalized spelling (as tokenizers' AddedVocabulary normalizes them): the byte-fallback family's metaspace
// Replace, or NFC.
enum class TokenNormalizer { none, metaspace, nfc };

AddedVocabulary read_added_tokens(const JsonFile& file, const json& list, TokenNormalizer normalizer) {
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
    if (normalizer == TokenNormalizer::metaspace && token.normalized)
      append_metaspace_normalized(token.pattern, token.content);
    if (normalizer == TokenNormalizer::nfc && token.normalized) append_nfc(token.pattern, token.content);
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
  for (auto it = config.begin(); it != config.end(); ++it) settings.keys.insert(it.key());
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
  settings.padding_side_given = config.contains("padding_side") && !config["padding_side"].is_null();
  if (config.contains("bos_token")) settings.bos_token = token_content(file, "bos_token", config["bos_token"]);
  if (config.contains("eos_token")) settings.eos_token = token_content(file, "eos_token", config["eos_token"]);
  if (config.contains("unk_token")) settings.unk_token = token_content(file, "unk_token", config["unk_token"]);
  if (config.contains("mask_token")) settings.mask_token = token_content(file, "mask_token", config["mask_token"]);
  // transformers 5 rebuilds the post-processor when either flag is given (tokenization_utils_tokenizers.py).
  for (auto [flag, out] :
       {std::pair{"add_bos_token", &settings.add_bos_token}, std::pair{"add_eos_token", &settings.add_eos_token}})
    if (config.contains(flag) && !config[flag].is_null()) *out = file.bool_at(config, "(top level)", flag);
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
  // (and a missing class); GPT2Tokenizer and GemmaTokenizer have their own __init__, which keeps only vocab,
  // merges, added tokens and post-processor of the file and installs the rest in code (transformers
  // tokenization_utils_tokenizers.py, convert_to_native_format; models/gpt2/tokenization_gpt2.py,
  // models/gemma/tokenization_gemma.py).
  std::string tokenizer_class = parts.settings.tokenizer_class;
  if (tokenizer_class.size() > 4 && tokenizer_class.ends_with("Fast") && tokenizer_class != "PreTrainedTokenizerFast")
    tokenizer_class.resize(tokenizer_class.size() - 4);
  bool gpt2_rebuild = source == PipelineSource::transformers && tokenizer_class == "GPT2Tokenizer";
  bool gemma_rebuild = source == PipelineSource::transformers && tokenizer_class == "GemmaTokenizer";
  bool qwen2_rebuild = source == PipelineSource::transformers && tokenizer_class == "Qwen2Tokenizer";
  bool known = tokenizer_class.empty() || tokenizer_class == "PreTrainedTokenizerFast" ||
               tokenizer_class == "TokenizersBackend" || gpt2_rebuild || gemma_rebuild || qwen2_rebuild;
  if (source == PipelineSource::transformers && !known)
    throw util::DataError(
        fmt::format("{}: tokenizer_class = \"{}\": unsupported (transformers 5 may rebuild this tokenizer's "
                    "pipeline in code; lrhost knows PreTrainedTokenizerFast, TokenizersBackend, GPT2Tokenizer, "
                    "GemmaTokenizer, Qwen2Tokenizer)",
                    (folder / "tokenizer_config.json").string(), parts.settings.tokenizer_class),
        "use PipelineSource::file (lrhost tokenize --pipeline file) to run tokenizer.json as it is");

  // The family. GemmaTokenizer (through transformers) is byte-fallback whatever tokenizer.json says, since the
  // class installs it. Otherwise tokenizer.json decides: model.byte_fallback = true is the byte-fallback family
  // (SentencePiece-converted BPE: Gemma, and Llama-style files, whose Metaspace/Prepend normalizers are then
  // refused by name), anything else byte-level. The rest of the file must fit the family it chose.
  bool byte_fallback_file = !gpt2_rebuild && !gemma_rebuild && !qwen2_rebuild && detail::declares_byte_fallback(file);
  parts.family = gemma_rebuild || byte_fallback_file ? Family::byte_fallback : Family::byte_level;
  auto pre_tokenizer = std::make_shared<PreTokenizer>();
  const json& model_json = file.member(root, "(top level)", "model");
  fs::path config_path = folder / "tokenizer_config.json";
  if (parts.family == Family::byte_fallback) {
    parts.byte_level_decoder = false;
    if (gemma_rebuild) {
      parts.pipeline_note =
          "tokenizer_class GemmaTokenizer: transformers 5 installs the normalizer, "
          "pre-tokenizer and BPE options";
      // The class's defaults (padding_side = "left" is a class attribute; the special tokens are __init__
      // defaults).
      if (!parts.settings.padding_side_given) parts.settings.padding_side = Side::left;
      for (auto [token, fallback] :
           {std::pair{&parts.settings.pad_token, "<pad>"}, std::pair{&parts.settings.bos_token, "<bos>"},
            std::pair{&parts.settings.eos_token, "<eos>"}, std::pair{&parts.settings.unk_token, "<unk>"}})
        if (!token->has_value()) *token = fallback;
    } else {
      detail::check_byte_fallback_pipeline(file);
    }
    parts.model = read_model(file, model_json, gemma_rebuild ? ModelRule::gemma_rebuild : ModelRule::from_file,
                             parts.settings.unk_token.value_or("<unk>"));
    parts.added = read_added_tokens(file, root.value("added_tokens", json()), TokenNormalizer::metaspace);
    if (gemma_rebuild) {
      // transformers registers the class's special tokens as added tokens (special, not normalized); one
      // missing from both lists gets the next free id, as add_tokens assigns it.
      std::optional<std::string> mask = parts.settings.mask_token.value_or("<mask>");
      for (const auto* token : {&parts.settings.unk_token, &parts.settings.bos_token, &parts.settings.eos_token,
                                &parts.settings.pad_token, &mask}) {
        if (!*token || token->value().empty() || parts.added.id_of(**token)) continue;
        AddedToken added;
        added.content = **token;
        added.special = true;
        auto found = parts.model->vocab().find(added.content);
        std::size_t outside = 0;
        for (const AddedToken& existing : parts.added.tokens())
          outside += !parts.model->vocab().count(existing.content);
        added.id = found != parts.model->vocab().end()
                       ? found->second
                       : static_cast<std::int32_t>(parts.model->vocab().size() + outside);
        parts.added.add(std::move(added));
      }
    }
    const json& post = root.value("post_processor", json());
    bool rebuild_post =
        gemma_rebuild && (parts.settings.add_bos_token || parts.settings.add_eos_token || post.is_null());
    if (rebuild_post)
      detail::rebuild_template(config_path, parts.settings, parts.added, *parts.model, parts.prefix_ids,
                               parts.suffix_ids);
    else
      detail::read_template(file, post, parts.prefix_ids, parts.suffix_ids);
  } else {
    if (gpt2_rebuild) {
      pre_tokenizer->add_byte_level(parts.settings.add_prefix_space, true);
      parts.byte_level_decoder = true;
      parts.pipeline_note = "tokenizer_class GPT2Tokenizer: transformers 5 replaces tokenizer.json's pre-tokenizer";
    } else if (qwen2_rebuild) {
      // tokenization_qwen2.py's __init__: NFC, Split + ByteLevel, ByteLevel decoder, whatever the file says.
      detail::check_qwen2_files(file, config_path);
      detail::apply_qwen2_defaults(parts.settings);
      detail::add_qwen2_pre_tokenizer(parts.settings.add_prefix_space, *pre_tokenizer);
      parts.nfc = true;
      parts.byte_level_decoder = true;
      parts.pipeline_note =
          "tokenizer_class Qwen2Tokenizer: transformers 5 installs the normalizer, pre-tokenizer, decoder and BPE "
          "options";
    } else {
      parts.nfc = read_normalizer(file, root.value("normalizer", json()));
      const json& pre = root.value("pre_tokenizer", json());
      if (!pre.is_null()) add_pre_tokenizer(file, pre, "pre_tokenizer", *pre_tokenizer);
      check_decoder(file, root.value("decoder", json()), "decoder", parts.byte_level_decoder);
    }
    if (qwen2_rebuild) {
      parts.model = read_model(file, model_json, ModelRule::qwen2_rebuild, "");
      parts.added = detail::read_qwen2_added_tokens(file, config_path, parts.settings, *parts.model);
      // The file's post-processor. transformers drops add_bos_token / add_eos_token from the config whenever
      // tokenizer.json exists (tokenization_utils_base.py, _from_pretrained), so a missing one is rebuilt as
      // plain "$A": no tokens either way.
      const json& post = root.value("post_processor", json());
      if (post.is_object() && post.value("type", std::string()) == "TemplateProcessing")
        detail::read_template(file, post, parts.prefix_ids, parts.suffix_ids);
      else
        check_post_processor(file, post, "post_processor");
    } else {
      // transformers 5 rebuilds the post-processor from these; a BOS/EOS it would add is not supported here.
      // tokenizer.json run as it is never reads them.
      for (auto [flag, value] : {std::pair{"add_bos_token", parts.settings.add_bos_token},
                                 std::pair{"add_eos_token", parts.settings.add_eos_token}})
        if (value.value_or(false) && source == PipelineSource::transformers)
          throw util::DataError(
              fmt::format("{}: {} = true: adding BOS/EOS tokens to byte-level BPE is not supported "
                          "(transformers would add them; lrhost adds none)",
                          config_path.string(), flag));
      parts.model = read_model(file, model_json, gpt2_rebuild ? ModelRule::gpt2_rebuild : ModelRule::from_file, "");
      parts.added = read_added_tokens(file, root.value("added_tokens", json()),
                                      parts.nfc ? TokenNormalizer::nfc : TokenNormalizer::none);
      check_post_processor(file, root.value("post_processor", json()), "post_processor");
    }
  }
  parts.pre_tokenizer = std::move(pre_tokenizer);

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
