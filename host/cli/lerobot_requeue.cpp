// Recognising a requeued lerobot-train command by its output folder's checkpoints; see lerobot_requeue.hpp.
#include "host/cli/lerobot_requeue.hpp"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "host/ckpt/checkpoint_layout.hpp"
#include "host/ckpt/recipe_snapshot.hpp"
#include "host/ckpt/training_state.hpp"

namespace lrhost::cli {
namespace fs = std::filesystem;

namespace {

std::vector<std::string> without_resume(const std::vector<std::string>& overrides) {
  std::vector<std::string> kept;
  std::copy_if(overrides.begin(), overrides.end(), std::back_inserter(kept),
               [](const std::string& o) { return !o.starts_with("resume="); });
  return kept;
}

}  // namespace

std::optional<std::string> requeued_command_note(const fs::path& output_dir, const std::string& recipe,
                                                 const std::vector<std::string>& overrides) {
  const fs::path checkpoints = output_dir / ckpt::kCheckpointsDir;
  if (!ckpt::path_exists(checkpoints)) return std::nullopt;
  const auto newest = ckpt::scan_checkpoints(checkpoints, /*warn=*/false).last_complete;
  if (!newest) return std::nullopt;
  const fs::path launch_file = *newest / ckpt::kPretrainedDir / ckpt::kLaunchFile;
  std::ifstream in(launch_file);
  const auto launch = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  // Unreadable: not recognisably this command's; the fresh run's refusal names the folder.
  if (!launch.is_object() || !launch.contains("overrides") || !launch["overrides"].is_array()) return std::nullopt;
  std::vector<std::string> saved;
  for (const auto& o : launch["overrides"])
    if (o.is_string()) saved.push_back(o.get<std::string>());
  if (launch.value("recipe", std::string()) != recipe || without_resume(saved) != without_resume(overrides))
    return std::nullopt;
  const int64_t step = ckpt::load_training_step(*newest / ckpt::kTrainingStateDir).step;
  return output_dir.string() + " holds checkpoints of this same command (newest: step " + std::to_string(step) +
         "; e.g. a requeued job): continuing that run (resume=auto), as lerobot-train's --resume=true "
         "--config_path=" +
         (checkpoints / ckpt::kLastLink / ckpt::kPretrainedDir / ckpt::kTrainConfigFile).string() +
         " would; to start fresh there, add --overwrite";
}

}  // namespace lrhost::cli
