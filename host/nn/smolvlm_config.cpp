// SmolVLM config.json reading: vision, text, connector scale and dtypes.
#include "host/nn/smolvlm_config.hpp"

#include "host/io/atomic_dir.hpp"
#include "host/util/error.hpp"

namespace lrhost::nn {
namespace {

using util::ConfigError;

std::optional<c10::ScalarType> read_dtype(const nlohmann::json& object, const std::string& where) {
  for (const char* key : {"dtype", "torch_dtype"}) {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) continue;
    if (!it->is_string()) throw ConfigError(where + ": '" + key + "' must be a dtype name, got " + it->dump());
    const auto name = it->get<std::string>();
    if (name == "float32") return c10::kFloat;
    if (name == "bfloat16") return c10::kBFloat16;
    if (name == "float16") return c10::kHalf;
    throw ConfigError(where + ": '" + key + "' = '" + name + "' is not supported",
                      "lrhost builds VLMs in float32, bfloat16 or float16");
  }
  return std::nullopt;
}

}  // namespace

c10::ScalarType SmolVLMConfig::top_dtype() const {
  return dtype.value_or(c10::kFloat);
}
c10::ScalarType SmolVLMConfig::text_model_dtype() const {
  return text_dtype.value_or(top_dtype());
}
c10::ScalarType SmolVLMConfig::vision_model_dtype() const {
  return vision_dtype.value_or(top_dtype());
}

SmolVLMConfig SmolVLMConfig::read(const std::filesystem::path& dir_or_file) {
  const auto file = std::filesystem::is_directory(dir_or_file) ? dir_or_file / "config.json" : dir_or_file;
  const nlohmann::json top = nlohmann::json::parse(io::read_json_file(file, {}).dump());
  const std::string where = file.string();
  if (!top.is_object()) throw ConfigError(where + ": expected a JSON object at the top level");
  auto object = [&](const char* key) -> const nlohmann::json& {
    auto it = top.find(key);
    if (it == top.end() || !it->is_object())
      throw ConfigError(where + ": missing object '" + std::string(key) + "'",
                        "expected a SmolVLM config.json (SmolVLM2-500M-Video-Instruct's or one written by "
                        "transformers' SmolVLMConfig.save_pretrained)");
    return *it;
  };
  SmolVLMConfig c;
  c.vision = SiglipVisionConfig::from_json(object("vision_config"), where + ": vision_config");
  c.text = llama_config_from_json(object("text_config"), where + ": text_config");
  if (auto it = top.find("scale_factor"); it != top.end()) {
    if (!it->is_number_integer() || it->get<int64_t>() <= 0)
      throw ConfigError(where + ": 'scale_factor' must be a positive integer, got " + it->dump());
    c.scale_factor = it->get<int64_t>();
  }
  if (c.vision.patches_per_side() % c.scale_factor != 0)
    throw ConfigError(where + ": the patch grid side (" + std::to_string(c.vision.patches_per_side()) +
                      ") must be divisible by 'scale_factor' (" + std::to_string(c.scale_factor) + ")");
  c.dtype = read_dtype(top, where);
  c.text_dtype = read_dtype(object("text_config"), where + ": text_config");
  c.vision_dtype = read_dtype(object("vision_config"), where + ": vision_config");
  return c;
}

}  // namespace lrhost::nn
