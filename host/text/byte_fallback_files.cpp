// Reading the byte-fallback family's pipeline and post-processor; see byte_fallback_files.hpp.
#include "host/text/byte_fallback_files.hpp"

#include <fmt/format.h>

#include "host/text/byte_fallback.hpp"

namespace lrhost::text::detail {

bool declares_byte_fallback(const JsonFile& file) {
  const json& model = file.root().value("model", json());
  return model.is_object() && model.value("byte_fallback", json()).is_boolean() && model["byte_fallback"].get<bool>();
}

namespace {

bool is_metaspace_replace(const json& node) {
  return node.is_object() && node.value("type", std::string()) == "Replace" && node.contains("pattern") &&
         node["pattern"].is_object() && node["pattern"].value("String", json()) == " " &&
         node.value("content", json()) == std::string(metaspace);
}

void check_fallback_decoder(const JsonFile& file, const json& node, const std::string& key) {
  if (node.is_null()) return;
  std::string type = file.string_at(node, key, "type");
  if (type == "Sequence") {
    const json& steps = file.member(node, key, "decoders");
    if (!steps.is_array()) file.fail(key + ".decoders", steps, "expected an array");
    for (std::size_t i = 0; i < steps.size(); ++i)
      check_fallback_decoder(file, steps[i], fmt::format("{}.decoders[{}]", key, i));
    return;
  }
  // Decoding is for diagnostics only; these are the steps lrhost's decoder reproduces (Strip is ignored).
  if (type == "ByteFallback" || type == "Fuse" || type == "Strip") return;
  if (type == "Replace" && node.contains("pattern") && node["pattern"].is_object() &&
      node["pattern"].value("String", json()) == std::string(metaspace) && node.value("content", json()) == " ")
    return;
  file.fail(key + ".type", type,
            "unsupported decoder for byte-fallback BPE (supported: Replace(\"\u2581\", \" \"), "
            "ByteFallback, Fuse, Strip, Sequence of these)");
}

}  // namespace

void check_byte_fallback_pipeline(const JsonFile& file) {
  const json& root = file.root();
  const json& normalizer = root.value("normalizer", json());
  bool plain = is_metaspace_replace(normalizer) ||
               (normalizer.is_object() && normalizer.value("type", std::string()) == "Sequence" &&
                normalizer.value("normalizers", json()).is_array() && normalizer["normalizers"].size() == 1 &&
                is_metaspace_replace(normalizer["normalizers"][0]));
  if (!plain)
    file.fail("normalizer", normalizer,
              "unsupported normalizer for byte-fallback BPE (supported: Replace(\" \", \"\u2581\") only, as Gemma's)",
              "a Metaspace or Prepend step (Llama's dummy prefix) is not implemented");
  const json& pre = root.value("pre_tokenizer", json());
  if (!pre.is_null()) {
    bool no_op = pre.is_object() && pre.value("type", std::string()) == "Split" && pre.contains("pattern") &&
                 pre["pattern"].is_object() && pre["pattern"].value("String", json()) == " " &&
                 pre.value("behavior", std::string()) == "MergedWithPrevious" && !pre.value("invert", false);
    if (!no_op)
      file.fail("pre_tokenizer", pre,
                "unsupported pre-tokenizer for byte-fallback BPE (supported: none, or Split(\" \", "
                "MergedWithPrevious), which is a no-op after the normalizer)");
  }
  check_fallback_decoder(file, root.value("decoder", json()), "decoder");
}

void read_template(const JsonFile& file, const json& node, std::vector<std::int32_t>& prefix,
                   std::vector<std::int32_t>& suffix) {
  prefix.clear();
  suffix.clear();
  if (node.is_null()) return;
  const std::string key = "post_processor";
  std::string type = file.string_at(node, key, "type");
  if (type != "TemplateProcessing")
    file.fail(key + ".type", type, "unsupported post-processor for byte-fallback BPE (supported: TemplateProcessing)");
  const json& single = file.member(node, key, "single");
  if (!single.is_array()) file.fail(key + ".single", single, "expected an array");
  const json& table = file.member(node, key, "special_tokens");
  if (!table.is_object()) file.fail(key + ".special_tokens", table, "expected an object");
  bool seen_sequence = false;
  for (std::size_t i = 0; i < single.size(); ++i) {
    std::string item_key = fmt::format("{}.single[{}]", key, i);
    const json& item = single[i];
    if (item.is_object() && item.contains("Sequence")) {
      const json& sequence = item["Sequence"];
      if (!sequence.is_object() || sequence.value("id", json()) != "A")
        file.fail(item_key + ".Sequence", sequence, "expected {\"id\": \"A\", ...} (one text per encoding)");
      if (seen_sequence) file.fail(item_key, item, "the text ($A) appears twice");
      seen_sequence = true;
      continue;
    }
    if (!item.is_object() || !item.contains("SpecialToken"))
      file.fail(item_key, item, "expected {\"SpecialToken\": ...} or {\"Sequence\": ...}");
    std::string name = file.string_at(item["SpecialToken"], item_key + ".SpecialToken", "id");
    if (!table.contains(name))
      file.fail(key + ".special_tokens", table, fmt::format("no entry for \"{}\", used by {}", name, item_key));
    std::string entry_key = fmt::format("{}.special_tokens[\"{}\"]", key, name);
    const json& ids = file.member(table[name], entry_key, "ids");
    if (!ids.is_array()) file.fail(entry_key + ".ids", ids, "expected an array of ids");
    for (const json& id : ids) {
      if (!id.is_number_integer() || id.get<std::int64_t>() < 0 || id.get<std::int64_t>() > INT32_MAX)
        file.fail(entry_key + ".ids", ids, "expected non-negative integer ids");
      (seen_sequence ? suffix : prefix).push_back(id.get<std::int32_t>());
    }
  }
  if (!seen_sequence) file.fail(key + ".single", single, "the template has no $A (the text)");
}

void rebuild_template(const std::filesystem::path& config_path, const TokenizerSettings& settings,
                      const AddedVocabulary& added, const BpeModel& model, std::vector<std::int32_t>& prefix,
                      std::vector<std::int32_t>& suffix) {
  prefix.clear();
  suffix.clear();
  auto id_of = [&](const std::string& token, const char* name) {
    if (auto id = added.id_of(token)) return *id;
    if (auto found = model.vocab().find(token); found != model.vocab().end()) return found->second;
    throw util::DataError(fmt::format("{}: {} = \"{}\" is neither an added token nor in the vocabulary",
                                      config_path.string(), name, token));
  };
  // An unset token turns its flag off, as in transformers.
  if (settings.add_bos_token.value_or(false) && settings.bos_token)
    prefix.push_back(id_of(*settings.bos_token, "bos_token"));
  if (settings.add_eos_token.value_or(false) && settings.eos_token)
    suffix.push_back(id_of(*settings.eos_token, "eos_token"));
}

}  // namespace lrhost::text::detail
