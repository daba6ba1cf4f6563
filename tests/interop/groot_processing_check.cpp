// Interop check of lrhost's GR00T N1.7 processor math (host/policy/groot/groot_pack, groot_images)
// against LeRobot 0.6.1's GrootN17PackInputsStep, GrootN17VLMEncodeStep's image transform,
// transformers 5.5.4's Qwen2VLImageProcessor and GrootActionUnpackUnnormalizeStep: reads what
// groot_processing_oracle.py wrote (inputs, outputs, case.json) and recomputes every output.
//
// Tolerances. Everything LeRobot computes here is a short chain of elementwise IEEE float32 ops
// (sub, mul, div, add, clamp, where) or integer / uint8 work, which lrhost issues in the same order
// and dtype, so the packed state / action / action_mask, embodiment ids, languages and every uint8
// image (the same ATen antialiased-bicubic kernel on the same device) must be bit-equal (bound 0).
// pixel_values ((x - 127.5) / 127.5 and the CLIP-normalised variant, |values| <= 2.2) and the
// unpacked action (|values| <= 4) get 1e-6: below 4 float32 ulps at their magnitudes, i.e. room for
// one differently rounded op at most; they are expected to be exactly 0 too (the report shows it).
//
//   lrhost_groot_processing_check ORACLE_DIR
#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "host/io/atomic_dir.hpp"
#include "host/io/safetensors.hpp"
#include "host/policy/groot/groot_images.hpp"
#include "host/policy/groot/groot_pack.hpp"
#include "tensor_checks.hpp"

namespace fs = std::filesystem;
namespace gp = lrhost::policy::groot;
using lrhost::interop::max_abs;
using lrhost::interop::report;

namespace {

// Bit-equality as a report line: shape and dtype must match, then the largest difference (0 wanted).
void report_exact(const std::string& what, const torch::Tensor& got, const torch::Tensor& want, double bound = 0.0) {
  if (got.sizes() != want.sizes() || got.scalar_type() != want.scalar_type()) {
    std::printf("FAIL: %s: shape/dtype %s %s, LeRobot %s %s\n", what.c_str(), c10::toString(got.scalar_type()),
                c10::str(got.sizes()).c_str(), c10::toString(want.scalar_type()), c10::str(want.sizes()).c_str());
    ++lrhost::interop::failures();
    return;
  }
  report(what, max_abs(got.to(torch::kFloat64) - want.to(torch::kFloat64)), bound);
}

void report_strings(const std::string& what, const std::vector<std::string>& got,
                    const std::vector<std::string>& want) {
  const bool ok = got == want;
  if (!ok) ++lrhost::interop::failures();
  std::printf("%s %s\n", ok ? "ok:  " : "FAIL:", what.c_str());
  for (std::size_t i = 0; !ok && i < std::max(got.size(), want.size()); ++i)
    std::printf("       [%zu] lrhost '%s' LeRobot '%s'\n", i, i < got.size() ? got[i].c_str() : "-",
                i < want.size() ? want[i].c_str() : "-");
}

gp::GrootPackSizes sizes_of(const nlohmann::ordered_json& j) {
  gp::GrootPackSizes sizes;
  sizes.max_state_dim = j.at("max_state_dim").get<int64_t>();
  sizes.max_action_dim = j.at("max_action_dim").get<int64_t>();
  sizes.action_horizon = j.at("action_horizon").get<int64_t>();
  sizes.valid_action_horizon = j.at("valid_action_horizon").get<int64_t>();
  return sizes;
}

gp::GrootImageGeometry geometry_of(const nlohmann::ordered_json& j) {
  gp::GrootImageGeometry geometry;
  geometry.target_height = j.at("image_target_size").at(0).get<int64_t>();
  geometry.target_width = j.at("image_target_size").at(1).get<int64_t>();
  const auto& crop = j.at("image_crop_size");
  geometry.crop_height = crop.is_null() ? std::nullopt : std::optional<int64_t>(crop.at(0).get<int64_t>());
  if (j.contains("shortest_image_edge")) geometry.shortest_image_edge = j.at("shortest_image_edge").get<int64_t>();
  if (j.contains("crop_fraction")) geometry.crop_fraction = j.at("crop_fraction").get<double>();
  geometry.letter_box_transform = j.value("letter_box_transform", false);
  return geometry;
}

}  // namespace

int main(int argc, char** argv) {
  return lrhost::interop::run_check(argc, argv, "lrhost_groot_processing_check", [](const fs::path& dir) {
    const auto in = lrhost::io::read_safetensors(dir / "inputs.safetensors");
    const auto want = lrhost::io::read_safetensors(dir / "outputs.safetensors");
    const auto c = lrhost::io::read_json_file(dir / "case.json", "written by groot_processing_oracle.py");
    const auto sizes = sizes_of(c.at("sizes"));
    const int64_t batch = in.at("state").size(0);

    // Pack step (training call).
    const gp::MinMaxStats state_stats{in.at("stats.state.min"), in.at("stats.state.max")};
    const gp::MinMaxStats action_stats{in.at("stats.action.min"), in.at("stats.action.max")};
    report_exact("state (B, 1, max_state_dim)", gp::groot_pack_state(in.at("state"), &state_stats, sizes),
                 want.at("state"));
    const auto packed = gp::groot_pack_action(in.at("action"), in.at("action_is_pad"), &action_stats, sizes);
    report_exact("action (B, H, max_action_dim)", packed.action, want.at("action"));
    report_exact("action_mask", packed.action_mask, want.at("action_mask"));
    report_exact("embodiment_id (" + c.at("embodiment_tag").get<std::string>() + ")",
                 gp::groot_embodiment_ids(c.at("embodiment_tag").get<std::string>(), batch, torch::kCPU),
                 want.at("embodiment_id"));
    const auto tasks = c.at("tasks").get<std::vector<std::string>>();
    const auto languages = gp::groot_language_batch(tasks, batch, true);
    report_strings("language (formalized)", languages, c.at("languages").get<std::vector<std::string>>());
    report_strings("VLM-step language (formalize off)", gp::groot_language_batch(languages, batch, false),
                   c.at("vlm_languages").get<std::vector<std::string>>());

    // Pack step (inference call: no action, another tag, valid horizon < horizon).
    const auto infer_sizes = sizes_of(c.at("infer_sizes"));
    report_exact("inference state", gp::groot_pack_state(in.at("state"), &state_stats, infer_sizes),
                 want.at("infer.state"));
    report_exact("inference action_mask (B, H)", gp::groot_inference_action_mask(batch, infer_sizes, torch::kCPU),
                 want.at("infer.action_mask"));
    report_exact("inference embodiment_id (" + c.at("infer_embodiment_tag").get<std::string>() + ")",
                 gp::groot_embodiment_ids(c.at("infer_embodiment_tag").get<std::string>(), batch, torch::kCPU),
                 want.at("infer.embodiment_id"));
    report_strings("inference language (one task broadcast)",
                   gp::groot_language_batch({c.at("infer_task").get<std::string>()}, batch, true),
                   c.at("infer_languages").get<std::vector<std::string>>());

    // Cameras: order, float -> uint8, the packed video (B, 1, V, H, W, C).
    const auto cameras = gp::groot_camera_order(c.at("cameras").get<std::vector<std::string>>());
    report_strings("camera order", cameras, c.at("camera_order").get<std::vector<std::string>>());
    std::vector<torch::Tensor> views;
    for (const auto& camera : cameras) views.push_back(gp::groot_images_to_uint8(in.at(camera)));
    const auto video = torch::stack(views, 1);  // (B, V, C, H, W)
    report_exact("video uint8 (truncation)", video.permute({0, 1, 3, 4, 2}).unsqueeze(1), want.at("video"));

    // The VLM transform per geometry on all frames at once, in LeRobot's (sample, timestep, view) order,
    // then each Qwen2-VL processor configured for that geometry.
    const auto frames = video.flatten(0, 1);
    for (const auto& [gname, gjson] : c.at("geometries").items()) {
      const auto images = gp::groot_transform_images_for_vlm(frames, geometry_of(gjson));
      report_exact("VLM images uint8 (" + gname + ")", images, want.at("vlm." + gname));
      for (const auto& [pname, pjson] : c.at("processors").items()) {
        if (pjson.at("geometry").get<std::string>() != gname) continue;
        gp::QwenImageProcessorConfig config;
        config.patch_size = pjson.at("patch_size").get<int64_t>();
        config.merge_size = pjson.at("merge_size").get<int64_t>();
        config.temporal_patch_size = pjson.at("temporal_patch_size").get<int64_t>();
        config.min_pixels = pjson.at("min_pixels").get<int64_t>();
        config.max_pixels = pjson.at("max_pixels").get<int64_t>();
        config.image_mean = pjson.at("image_mean").get<std::vector<double>>();
        config.image_std = pjson.at("image_std").get<std::vector<double>>();
        config.rescale_factor = pjson.at("rescale_factor").get<double>();
        const auto pixels = gp::qwen2vl_preprocess_images(images, config);
        report_exact("pixel_values (" + pname + ")", pixels.pixel_values, want.at("pixel_values." + pname), 1e-6);
        report_exact("image_grid_thw (" + pname + ")", pixels.image_grid_thw, want.at("image_grid_thw." + pname));
      }
    }

    // Unpack step.
    for (const auto& [uname, u] : c.at("unpacks").items()) {
      const std::string key = u.at("stats").get<std::string>();
      const gp::MinMaxStats stats{in.at("stats." + key + ".min"), in.at("stats." + key + ".max")};
      gp::GrootUnpackOptions options;
      options.env_action_dim = u.at("env_action_dim").get<int64_t>();
      options.libero_gripper_action = u.at("libero").get<bool>();
      report_exact("unpacked action (" + uname + ")", gp::groot_unpack_action(in.at("chunk"), &stats, options),
                   want.at("unpack." + uname), 1e-6);
    }
  });
}
