// The layer geometry of pi0 / pi05: LeRobot 0.6.1 fixes it in code (PaliGemmaWithExpertModel and
// get_gemma_config in modeling_pi0.py: SigLIP So400m/14 at image_resolution with MLP 4304, projector to
// 2048, Gemma-2B for the VLM, Gemma-300M for the action expert, vocab 257,152), and its config.json has
// no field for it. lrhost also builds other geometries — tiny models for tests and the out-of-the-box
// recipes, which LeRobot can only build by patching those functions (reference pi0.md §9.2) — from a
// geometry JSON:
//   {"vlm":    {"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
//               "num_key_value_heads", "head_dim", "vocab_size"},
//    "expert": {the same keys},
//    "vision": {"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
//               "patch_size"}}
// (every key required; the projector maps to vlm.hidden_size; the image size is image_resolution). A
// pretrained folder of such a model carries it as geometry.json next to config.json (LeRobot ignores
// the file), so the folder loads as it was saved.
#pragma once
#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <utility>

#include "host/nn/gemma_config.hpp"
#include "host/nn/paligemma_config.hpp"

namespace lrhost::policy::pi {

inline constexpr const char* kGeometryFile = "geometry.json";

struct PiGeometry {
  nn::PaliGemmaConfig paligemma;  // vision tower, projector, VLM language model
  nn::GemmaConfig expert;         // the action expert (adaRMS norms for pi05)
  // Read from a geometry JSON (LeRobot's fixed geometry otherwise).
  bool custom = false;
};

// LeRobot's geometry for the variants and image size (only "gemma_2b" / "gemma_300m" exist), or the
// geometry JSON that `geometry` names (a file, a folder holding geometry.json, or "lrhost/<name>" for
// recipes/assets/<name>/geometry.json). `adarms`: the expert's norms are adaptive, conditioned on a
// vector of the expert's width (pi05). Errors name `where`, the file and the key.
PiGeometry pi_geometry(const std::string& paligemma_variant, const std::string& action_expert_variant,
                       int64_t image_size, bool adarms, const std::string& geometry, const std::string& where);

// The geometry JSON of a custom geometry (what save_pretrained writes as geometry.json).
nlohmann::ordered_json geometry_to_json(const PiGeometry& geometry);

// The pretrained-folder side of geometry.json (PolicySpec::read_pretrained_extras and
// missing_pretrained_extras): a folder's geometry.json becomes the config's `geometry` (unless the
// config names one); a config that names none, in a folder without the file, was built at LeRobot's
// full geometry, which a tiny folder's other fields contradict: that is said as {note, hint}.
void name_folder_geometry(const std::filesystem::path& dir, nlohmann::ordered_json& config);
std::optional<std::pair<std::string, std::string>> missing_folder_geometry(const std::filesystem::path& dir,
                                                                           const nlohmann::json& config);

}  // namespace lrhost::policy::pi
