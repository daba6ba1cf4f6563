// Interop check of lrhost's GR00T N1.7 checkpoint-statistics numerics (host/policy/groot/
// groot_checkpoint_stats) against LeRobot 0.6.1's _load_n1_7_checkpoint_stats / _action_horizon /
// _video_modality_keys, GrootN17PackInputsStep with raw_stats / modality_config and
// GrootN17ActionDecodeStep: reads the synthetic checkpoints and what groot_checkpoint_stats_oracle.py
// wrote, parses the checkpoints and recomputes every output.
//
// Tolerance 0 everywhere. The flat stats are the JSON doubles on both sides (Python's json and
// nlohmann both parse to the nearest double). The pack step's normalisation is a fixed chain of
// elementwise float32 ops (sub, mul by 2, div, sub 1, where, clamp) and the decode's
// (clip(y) + 1)·0.5·(hi - lo) + lo is numpy float32 (NumPy 2 keeps Python scalars weak), both with the
// bounds rounded once from double to float32; lrhost issues the same ops in the same order and dtype
// without fusing any, so every result must be bit-equal.
//
//   lrhost_groot_checkpoint_stats_check ORACLE_DIR
#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "host/io/atomic_dir.hpp"
#include "host/io/safetensors.hpp"
#include "host/policy/groot/groot_checkpoint_stats.hpp"
#include "host/policy/groot/groot_pack.hpp"
#include "tensor_checks.hpp"

namespace fs = std::filesystem;
namespace gp = lrhost::policy::groot;
using lrhost::interop::max_abs;
using lrhost::interop::report;

namespace {

// Shape and dtype must match, then the largest difference (bound 0).
void gcs_report(const std::string& what, const torch::Tensor& got, const torch::Tensor& want) {
  if (got.sizes() != want.sizes() || got.scalar_type() != want.scalar_type()) {
    std::printf("FAIL: %s: shape/dtype %s %s, LeRobot %s %s\n", what.c_str(), c10::toString(got.scalar_type()),
                c10::str(got.sizes()).c_str(), c10::toString(want.scalar_type()), c10::str(want.sizes()).c_str());
    ++lrhost::interop::failures();
    return;
  }
  report(what, max_abs(got.to(torch::kFloat64) - want.to(torch::kFloat64)), 0.0);
}

void gcs_report_flag(const std::string& what, bool ok) {
  if (!ok) ++lrhost::interop::failures();
  std::printf("%s %s\n", ok ? "ok:  " : "FAIL:", what.c_str());
}

torch::Tensor gcs_doubles(const std::vector<double>& values) {
  return torch::tensor(values, torch::kFloat64);
}

}  // namespace

int main(int argc, char** argv) {
  return lrhost::interop::run_check(argc, argv, "lrhost_groot_checkpoint_stats_check", [](const fs::path& dir) {
    const auto c = lrhost::io::read_json_file(dir / "case.json", "written by groot_checkpoint_stats_oracle.py");
    const auto tag = c.at("tag").get<std::string>();
    gp::GrootPackSizes sizes;
    sizes.max_state_dim = c.at("sizes").at("max_state_dim").get<int64_t>();
    sizes.max_action_dim = c.at("sizes").at("max_action_dim").get<int64_t>();
    sizes.action_horizon = c.at("sizes").at("action_horizon").get<int64_t>();
    const int64_t env_action_dim = c.at("env_action_dim").get<int64_t>();

    for (const auto& kase : c.at("cases")) {
      const auto name = kase.at("name").get<std::string>();
      const fs::path folder = dir / name;
      const nlohmann::json statistics = lrhost::io::read_json_file(folder / "ckpt" / "statistics.json", "oracle");
      const nlohmann::json processor = lrhost::io::read_json_file(folder / "ckpt" / "processor_config.json", "oracle");
      const auto parsed = gp::parse_groot_checkpoint_stats(statistics, processor, tag, name);
      if (!parsed) throw lrhost::util::DataError(name + ": no checkpoint stats parsed for '" + tag + "'");
      const auto& stats = *parsed;
      const auto in = lrhost::io::read_safetensors(folder / "inputs.safetensors");
      const auto want = lrhost::io::read_safetensors(folder / "outputs.safetensors");
      const std::string p = "[" + name + "] ";

      gcs_report_flag(p + "use_percentiles", stats.use_percentiles == kase.at("use_percentiles").get<bool>());
      gcs_report_flag(p + "valid_action_horizon",
                      stats.layout.valid_action_horizon == kase.at("valid_action_horizon").get<int64_t>());
      gcs_report_flag(p + "video_modality_keys", stats.layout.video_modality_keys ==
                                                     kase.at("video_modality_keys").get<std::vector<std::string>>());
      const auto flat = gp::groot_checkpoint_flat_stats(stats);
      for (const auto& [modality, f] :
           {std::pair{"observation.state", &flat.state}, std::pair{"action", &flat.action}}) {
        const std::string key = std::string("flat.") + modality + ".";
        gcs_report(p + key + "min", gcs_doubles(f->min), want.at(key + "min"));
        gcs_report(p + key + "max", gcs_doubles(f->max), want.at(key + "max"));
        gcs_report(p + key + "mean", gcs_doubles(f->mean), want.at(key + "mean"));
        gcs_report(p + key + "std", gcs_doubles(f->std), want.at(key + "std"));
      }

      // Pack: the checkpoint normalisation, then the step's padding and mask with no further stats.
      sizes.clip_outliers = kase.at("clip_outliers").get<bool>();
      sizes.valid_action_horizon = stats.layout.valid_action_horizon.value_or(sizes.action_horizon);
      for (const auto& [prefix, state_key, action_key] :
           {std::tuple{"pack", "state", "action"}, std::tuple{"narrow", "narrow_state", "narrow_action"}}) {
        const std::string what = p + prefix + ".";
        const auto state = gp::groot_checkpoint_normalize_state(in.at(state_key), stats, sizes.clip_outliers);
        gcs_report(what + "state", gp::groot_pack_state(state, nullptr, sizes),
                   want.at(what.substr(p.size()) + "state"));
        const auto action = gp::groot_checkpoint_normalize_action(in.at(action_key), stats, sizes.clip_outliers);
        const auto packed = gp::groot_pack_action(action, torch::Tensor(), nullptr, sizes);
        gcs_report(what + "action", packed.action, want.at(what.substr(p.size()) + "action"));
        gcs_report(what + "action_mask", packed.action_mask, want.at(what.substr(p.size()) + "action_mask"));
      }

      // Decode: a padded chunk longer than the valid horizon and a single (B, D) action.
      for (const auto& [env_dim, suffix] : {std::pair{env_action_dim, ""}, std::pair{int64_t{0}, ".full"}}) {
        for (const char* key : {"chunk", "single"}) {
          const std::string out_key = std::string("decode.") + key + suffix;
          gcs_report(p + out_key, gp::groot_checkpoint_decode_action(in.at(key), stats, env_dim), want.at(out_key));
        }
      }
    }
  });
}
