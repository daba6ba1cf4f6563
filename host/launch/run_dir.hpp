// The run directory: one folder per job holding every rank's full log and error file.
//   <run_dir>/logs/rank<R>.log       each rank's full log (launcher.log: the launcher's), appended
//                                    per attempt under an attempt header (util/log_file.hpp)
//   <run_dir>/errors/rank<R>.json    written by a rank that fails (see error_file.hpp)
//   <run_dir>/.lock                  held by the job that owns the folder (see run_lock.hpp)
// The default is outputs/lrhost/<YYYY-mm-dd_HH-MM-SS>_<recipe stem> under the current directory,
// claimed with an exclusive mkdir so two jobs started in the same second get two folders (the
// second gets a "_2" suffix); ranks started by torchrun or Slurm share one folder through the job
// id instead of a timestamp.
#pragma once
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

namespace lrhost::launch {

// "2025-03-01_14-05-09_train" (local time), or "<job id>_train" when a job id is given.
std::string run_dir_name(const std::string& recipe, std::chrono::system_clock::time_point when,
                         const std::optional<std::string>& job_id = std::nullopt);

// Creates a new folder parent/name, or parent/name_2, name_3, ... when that exists (mkdir is the
// arbiter, so two processes racing for one name never both get it); creates parent as needed.
// Returns the folder created. util::IoError naming the folder when it cannot.
std::filesystem::path claim_new_folder(const std::filesystem::path& parent, const std::string& name);

// outputs/lrhost/<run_dir_name> under the current directory. Inside a torchrun or Slurm job
// (TORCHELASTIC_RUN_ID other than "none", or SLURM_JOB_ID) the job id replaces the timestamp so
// that every rank of the job picks the same folder (not created here). Otherwise the folder is
// claimed (created) with claim_new_folder, except for a rank of an external job without a job id
// (RANK set): its ranks cannot agree on a claimed name, so they keep the plain timestamp name.
std::filesystem::path default_run_dir(const std::string& recipe);

std::filesystem::path log_dir(const std::filesystem::path& run_dir);
std::filesystem::path error_file_path(const std::filesystem::path& run_dir, int rank);

// Creates run_dir/logs and run_dir/errors; util::IoError naming the folder when it cannot.
void create_run_dir(const std::filesystem::path& run_dir);

}  // namespace lrhost::launch
