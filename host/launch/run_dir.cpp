// Naming, claiming and checking run directories.
#include "host/launch/run_dir.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <ctime>
#include <vector>

#include "host/util/error.hpp"

namespace lrhost::launch {
namespace {

std::optional<std::string> env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

bool is_step_folder_name(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::string run_dir_name(const std::string& recipe, std::chrono::system_clock::time_point when,
                         const std::optional<std::string>& job_id) {
  std::string stem = std::filesystem::path(recipe).stem().string();
  if (stem.empty()) stem = "recipe";
  if (job_id) return *job_id + "_" + stem;
  std::time_t seconds = std::chrono::system_clock::to_time_t(when);
  std::tm local{};
  localtime_r(&seconds, &local);
  std::array<char, 32> stamp{};
  std::strftime(stamp.data(), stamp.size(), "%Y-%m-%d_%H-%M-%S", &local);
  return std::string(stamp.data()) + "_" + stem;
}

std::filesystem::path claim_new_folder(const std::filesystem::path& parent, const std::string& name) {
  std::error_code ec;
  std::filesystem::create_directories(parent, ec);
  if (ec)
    throw util::IoError("could not create the folder '" + parent.string() + "': " + ec.message(),
                        "choose another folder with --run-dir DIR");
  constexpr int kMaxSuffix = 10000;
  for (int suffix = 1; suffix <= kMaxSuffix; ++suffix) {
    auto candidate = parent / (suffix == 1 ? name : name + "_" + std::to_string(suffix));
    // create_directory is one mkdir: false (no error) when the name exists, whoever made it.
    if (std::filesystem::create_directory(candidate, ec)) return candidate;
    if (ec)
      throw util::IoError("could not create the run folder '" + candidate.string() + "': " + ec.message(),
                          "choose another folder with --run-dir DIR");
  }
  throw util::IoError("could not find a free run folder name: " + (parent / name).string() + " and its suffixes _2.._" +
                          std::to_string(kMaxSuffix) + " all exist",
                      "choose another folder with --run-dir DIR");
}

std::filesystem::path default_run_dir(const std::string& recipe) {
  std::optional<std::string> job_id;
  auto elastic = env("TORCHELASTIC_RUN_ID");
  auto slurm = env("SLURM_JOB_ID");
  if (elastic && *elastic != "none")
    job_id = "torchrun-" + *elastic;
  else if (slurm)
    job_id = "slurm-" + *slurm;
  const auto parent = std::filesystem::current_path() / "outputs" / "lrhost";
  const auto name = run_dir_name(recipe, std::chrono::system_clock::now(), job_id);
  if (job_id || env("RANK")) return parent / name;
  return claim_new_folder(parent, name);
}

std::filesystem::path log_dir(const std::filesystem::path& run_dir) {
  return run_dir / "logs";
}

std::filesystem::path error_file_path(const std::filesystem::path& run_dir, int rank) {
  return run_dir / "errors" / ("rank" + std::to_string(rank) + ".json");
}

void create_run_dir(const std::filesystem::path& run_dir) {
  for (const auto& folder : {log_dir(run_dir), run_dir / "errors"}) {
    std::error_code ec;
    std::filesystem::create_directories(folder, ec);
    if (ec)
      throw util::IoError("could not create the run directory folder '" + folder.string() + "': " + ec.message(),
                          "choose another folder with --run-dir DIR");
  }
}

void check_fresh_run_dir(const std::filesystem::path& output_dir, bool resume, bool overwrite) {
  if (resume || overwrite) return;
  const auto checkpoints = output_dir / "checkpoints";
  std::error_code ec;
  if (!std::filesystem::is_directory(checkpoints, ec)) return;
  std::vector<std::string> steps;
  for (std::filesystem::directory_iterator it(checkpoints, ec), end; !ec && it != end; it.increment(ec))
    if (is_step_folder_name(it->path().filename().string()) && it->is_directory(ec))
      steps.push_back(it->path().filename().string());
  if (ec)
    throw util::IoError("could not list '" + checkpoints.string() + "': " + ec.message(),
                        "choose another folder with --run-dir DIR (or output_dir=DIR)");
  if (steps.empty()) return;
  std::sort(steps.begin(), steps.end());
  std::string listed = steps.front() + (steps.size() > 1 ? " .. " + steps.back() : "");
  throw util::ConfigError(
      "output folder '" + output_dir.string() + "' already holds checkpoints of an earlier run (" +
          std::to_string(steps.size()) + " step folder(s): " + listed + " in " + checkpoints.string() +
          "), and this run starts fresh (resume = false): its saves would overwrite them",
      "continue that run with resume=auto (or `lrhost resume " + output_dir.string() +
          "`), start over in this folder with --overwrite, or choose another folder with --run-dir DIR "
          "(or output_dir=DIR)");
}

bool overwrite_requested() {
  return env("LRHOST_OVERWRITE") == "1";
}

}  // namespace lrhost::launch
