// pi0/pi05 geometry: LeRobot's fixed one, or a geometry JSON (file, folder or shipped asset).
#include "host/policy/pi/pi_geometry.hpp"

#include <fstream>
#include <set>

#include "host/util/error.hpp"
#include "host/util/shipped_paths.hpp"

namespace lrhost::policy::pi {
namespace fs = std::filesystem;

namespace {

nn::GemmaConfig variant_config(const std::string& variant, const std::string& where) {
  if (variant == "gemma_2b") return nn::GemmaConfig::gemma_2b();
  if (variant == "gemma_300m") return nn::GemmaConfig::gemma_300m();
  throw util::ConfigError(where + ": unknown Gemma variant '" + variant + "' (expected gemma_2b or gemma_300m)");
}

fs::path geometry_file(const std::string& geometry) {
  fs::path path =
      geometry.starts_with(util::kShippedAssetPrefix) ? util::shipped_asset_dir(geometry) : fs::path(geometry);
  if (fs::is_directory(path)) path /= kGeometryFile;
  return path;
}

// Reads the keys of one section strictly: all required, positive integers, nothing else.
class SectionReader {
 public:
  SectionReader(const nlohmann::json& top, const char* section, std::string where)
      : where_(std::move(where) + ": '" + section + "'") {
    auto it = top.find(section);
    if (it == top.end() || !it->is_object()) throw util::ConfigError(where_ + " must be an object");
    object_ = &*it;
  }
  int64_t operator()(const char* key) {
    read_.insert(key);
    auto it = object_->find(key);
    if (it == object_->end()) throw util::ConfigError(where_ + " has no '" + key + "'");
    if (!it->is_number_integer() || it->get<int64_t>() <= 0)
      throw util::ConfigError(where_ + ": '" + key + "' must be a positive integer, got " + it->dump());
    return it->get<int64_t>();
  }
  void finish() const {
    for (const auto& [key, value] : object_->items())
      if (!read_.count(key)) throw util::ConfigError(where_ + ": unknown key '" + key + "'");
  }

 private:
  std::string where_;
  const nlohmann::json* object_ = nullptr;
  std::set<std::string> read_;
};

void read_gemma(const nlohmann::json& top, const char* section, const std::string& where, nn::GemmaConfig& c) {
  SectionReader read(top, section, where);
  c.hidden_size = read("hidden_size");
  c.intermediate_size = read("intermediate_size");
  c.num_hidden_layers = read("num_hidden_layers");
  c.num_attention_heads = read("num_attention_heads");
  c.num_key_value_heads = read("num_key_value_heads");
  c.head_dim = read("head_dim");
  c.vocab_size = read("vocab_size");
  read.finish();
}

nlohmann::ordered_json gemma_json(const nn::GemmaConfig& c) {
  return {{"hidden_size", c.hidden_size},
          {"intermediate_size", c.intermediate_size},
          {"num_hidden_layers", c.num_hidden_layers},
          {"num_attention_heads", c.num_attention_heads},
          {"num_key_value_heads", c.num_key_value_heads},
          {"head_dim", c.head_dim},
          {"vocab_size", c.vocab_size}};
}

}  // namespace

PiGeometry pi_geometry(const std::string& paligemma_variant, const std::string& action_expert_variant,
                       int64_t image_size, bool adarms, const std::string& geometry, const std::string& where) {
  PiGeometry g;
  g.paligemma = nn::PaliGemmaConfig::so400m_gemma_2b(image_size);
  g.paligemma.text = variant_config(paligemma_variant, where + " paligemma_variant");
  g.expert = variant_config(action_expert_variant, where + " action_expert_variant");
  if (!geometry.empty()) {
    const fs::path file = geometry_file(geometry);
    const std::string in = where + " geometry " + file.string();
    std::ifstream stream(file);
    if (!stream)
      throw util::ConfigError(where + ": 'geometry' = \"" + geometry + "\": cannot read " + file.string(),
                              "give a geometry JSON file, a folder holding geometry.json, or \"lrhost/<asset>\"");
    nlohmann::json top = nlohmann::json::parse(stream, nullptr, /*allow_exceptions=*/false);
    if (!top.is_object()) throw util::ConfigError(in + ": not a JSON object");
    for (const auto& [key, value] : top.items())
      if (key != "vlm" && key != "expert" && key != "vision")
        throw util::ConfigError(in + ": unknown key '" + key + "' (expected vlm, expert, vision)");
    read_gemma(top, "vlm", in, g.paligemma.text);
    read_gemma(top, "expert", in, g.expert);
    SectionReader vision(top, "vision", in);
    g.paligemma.vision.hidden_size = vision("hidden_size");
    g.paligemma.vision.intermediate_size = vision("intermediate_size");
    g.paligemma.vision.num_hidden_layers = vision("num_hidden_layers");
    g.paligemma.vision.num_attention_heads = vision("num_attention_heads");
    g.paligemma.vision.patch_size = vision("patch_size");
    vision.finish();
    g.custom = true;
  }
  g.paligemma.projection_dim = g.paligemma.text.hidden_size;
  if (!g.custom && g.paligemma.text.hidden_size != 2048)
    throw util::ConfigError(where + ": paligemma_variant '" + paligemma_variant +
                            "': LeRobot's PaliGemma projects images to width 2048, which only gemma_2b has");
  g.expert.use_adarms = adarms;
  g.expert.adarms_cond_dim = adarms ? g.expert.hidden_size : 0;
  // compute_layer_complete runs one attention over both streams: their heads must agree.
  const auto& v = g.paligemma.text;
  if (v.num_hidden_layers != g.expert.num_hidden_layers || v.num_attention_heads != g.expert.num_attention_heads ||
      v.num_key_value_heads != g.expert.num_key_value_heads || v.head_dim != g.expert.head_dim)
    throw util::ConfigError(where +
                            ": the VLM and the action expert must have the same num_hidden_layers, "
                            "num_attention_heads, num_key_value_heads and head_dim (their attention is joint)");
  if (g.paligemma.vision.image_size % g.paligemma.vision.patch_size != 0)
    throw util::ConfigError(where + ": image_resolution " + std::to_string(image_size) +
                            " is not a multiple of the vision patch size " +
                            std::to_string(g.paligemma.vision.patch_size));
  g.paligemma.validate(where);
  g.expert.validate(where + " expert");
  return g;
}

nlohmann::ordered_json geometry_to_json(const PiGeometry& geometry) {
  const auto& vision = geometry.paligemma.vision;
  return {{"vlm", gemma_json(geometry.paligemma.text)},
          {"expert", gemma_json(geometry.expert)},
          {"vision",
           {{"hidden_size", vision.hidden_size},
            {"intermediate_size", vision.intermediate_size},
            {"num_hidden_layers", vision.num_hidden_layers},
            {"num_attention_heads", vision.num_attention_heads},
            {"patch_size", vision.patch_size}}}};
}

void name_folder_geometry(const fs::path& dir, nlohmann::ordered_json& config) {
  std::error_code ec;
  if (fs::exists(dir / kGeometryFile, ec) && !config.contains("geometry"))
    config["geometry"] = (dir / kGeometryFile).string();
}

std::optional<std::pair<std::string, std::string>> missing_folder_geometry(const fs::path& dir,
                                                                           const nlohmann::json& config) {
  std::error_code ec;
  const bool geometry_named = config.contains("geometry") && config["geometry"] != "";
  if (fs::exists(dir / kGeometryFile, ec) || geometry_named) return std::nullopt;
  return std::pair{(dir / kGeometryFile).string() + " is missing, so the '" + config.value("type", std::string()) +
                       "' policy was built at LeRobot's geometry (PaliGemma Gemma-2B, Gemma-300M expert, SigLIP "
                       "patch 14)",
                   std::string("a folder lrhost saved from another geometry (e.g. lrhost/pi_tiny) holds ") +
                       kGeometryFile +
                       " next to config.json: the VLM, action expert and vision tower sizes (widths, layer and head "
                       "counts, patch size) that LeRobot's config.json cannot say; copy it back from the checkpoint "
                       "the folder came from, or give policy.geometry=FILE"};
}

}  // namespace lrhost::policy::pi
