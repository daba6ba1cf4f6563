// A requeued `lrhost lerobot-train` job: Slurm's requeue loop (docs/multi_gpu.md#preemption) reruns
// the job's command as it was typed, and lerobot-train's command line always starts a fresh run
// (the front door passes resume=false, as lerobot-train refuses an output folder that exists). So
// that the documented loop works for front-door users, a fresh run whose --output_dir already holds
// checkpoints of this very command (the same shipped recipe and the same overrides) continues them,
// and says so; checkpoints of any other command are still refused.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace lrhost::cli {

// When the newest complete checkpoint under `output_dir`/checkpoints was written by a run of `recipe`
// with `overrides` (compared without their resume= entries): the note the front door prints as it
// continues that run. nullopt when there is none, or it was another command's.
std::optional<std::string> requeued_command_note(const std::filesystem::path& output_dir, const std::string& recipe,
                                                 const std::vector<std::string>& overrides);

}  // namespace lrhost::cli
