// Folding a LoRA adapter folder into a plain pretrained folder; see merge_adapters.hpp.
#include "host/ckpt/merge_adapters.hpp"

#include "host/ckpt/checkpoint_layout.hpp"
#include "host/ckpt/pretrained_dir.hpp"
#include "host/io/atomic_dir.hpp"
#include "host/policy/peft/lora_adapters.hpp"
#include "host/policy/policy.hpp"
#include "host/util/error.hpp"

namespace lrhost::ckpt {
namespace fs = std::filesystem;

namespace {

// The pretrained folder DIR names: itself when it holds config.json, else its checkpoint's.
fs::path pretrained_folder_of(const fs::path& dir) {
  std::error_code ec;
  if (fs::is_regular_file(dir / kConfigFile, ec)) return dir;
  return resolve_checkpoint_dir(dir) / kPretrainedDir;
}

}  // namespace

MergeReport merge_adapter_folder(const fs::path& dir, const fs::path& out) {
  MergeReport report;
  report.adapter_dir = pretrained_folder_of(dir);
  if (!is_adapter_folder(report.adapter_dir))
    throw util::ConfigError("checkpoint merge: " + report.adapter_dir.string() +
                                " holds no LoRA adapters (its config.json does not say use_peft: true)",
                            "merge takes the pretrained_model folder of a run trained with policy.peft (lerobot-train "
                            "--peft.*), or a LeRobot PEFT folder");
  std::error_code ec;
  if (fs::exists(out, ec) && !(fs::is_directory(out, ec) && fs::is_empty(out, ec)))
    throw util::ConfigError("checkpoint merge: --out " + out.string() + " exists and is not an empty folder",
                            "give a new folder; nothing is overwritten");
  auto policy = load_pretrained(report.adapter_dir, /*strict=*/true);
  const auto* adapters = policy->lora_adapters();
  report.base = adapters->base_model_name_or_path;
  report.merged_layers = adapters->selection.adapted.size();
  report.trained_fully = adapters->selection.trained_fully.size();
  policy::merge_lora_adapters(*policy);
  if (fs::exists(out, ec)) fs::remove(out, ec);  // the empty folder: AtomicDir creates it whole
  io::AtomicDir staging(out);
  save_pretrained(*policy, staging.path());
  staging.commit();
  return report;
}

}  // namespace lrhost::ckpt
