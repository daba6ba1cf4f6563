// The run directory: one folder per job holding every rank's full log and error file.
//   <run_dir>/logs/rank<R>.log       each rank's full log (launcher.log: the launcher's)
//   <run_dir>/errors/rank<R>.json    written by a rank that fails (see error_file.hpp)
// The default is outputs/lrhost/<YYYY-mm-dd_HH-MM-SS>_<recipe stem> under the current directory;
// ranks started by torchrun or Slurm share one folder through the job id instead of a timestamp.
#pragma once
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

namespace lrhost::launch {

// "2025-03-01_14-05-09_train" (local time), or "<job id>_train" when a job id is given.
std::string run_dir_name(const std::string& recipe, std::chrono::system_clock::time_point when,
                         const std::optional<std::string>& job_id = std::nullopt);

// outputs/lrhost/<run_dir_name> under the current directory. Inside a torchrun or Slurm job
// (TORCHELASTIC_RUN_ID other than "none", or SLURM_JOB_ID) the job id replaces the timestamp so
// that every rank of the job picks the same folder.
std::filesystem::path default_run_dir(const std::string& recipe);

std::filesystem::path log_dir(const std::filesystem::path& run_dir);
std::filesystem::path error_file_path(const std::filesystem::path& run_dir, int rank);

// Creates run_dir/logs and run_dir/errors; util::IoError naming the folder when it cannot.
void create_run_dir(const std::filesystem::path& run_dir);

}  // namespace lrhost::launch
