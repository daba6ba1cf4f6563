// Where `lrhost eval` keeps its logs: in the folder of the run it evaluates, as
// <run>/eval/logs/<time>_eval/ (next to the eval/<step>/ results), not in a new
// ./outputs/lrhost/<time>_eval_policy/ of whatever folder the command was typed in. Its own
// subfolder, so an evaluation of a run that is still training never meets the training's lock.
#pragma once
#include <filesystem>
#include <optional>
#include <string>

namespace lrhost::cli {

// The run folder an eval CHECKPOINT argument belongs to, as recipes/eval_policy.lua reads it: a run
// folder (checkpoints/last), a step folder (checkpoints/<step>), its pretrained_model folder, or a
// bare pretrained folder (itself). nullopt when it is none of these (the recipe then names the error).
std::optional<std::filesystem::path> evaluated_run_folder(const std::filesystem::path& checkpoint);

// For main.cpp's eval subcommand: when neither --run-dir (`run_dir`) nor $LRHOST_RUN_DIR chose the
// folder and the checkpoint's run folder is known, claims <run>/eval/logs/<time>_eval/ and puts it
// in `run_dir`. util::IoError naming the folder when it cannot be created.
void choose_eval_run_dir(std::optional<std::string>& run_dir, const std::filesystem::path& checkpoint);

}  // namespace lrhost::cli
