// Naming and creating run directories.
#include "host/launch/run_dir.hpp"

#include <array>
#include <cstdlib>
#include <ctime>

#include "host/util/error.hpp"

namespace lrhost::launch {

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

std::filesystem::path default_run_dir(const std::string& recipe) {
  std::optional<std::string> job_id;
  const char* elastic = std::getenv("TORCHELASTIC_RUN_ID");
  const char* slurm = std::getenv("SLURM_JOB_ID");
  if (elastic != nullptr && *elastic != '\0' && std::string(elastic) != "none")
    job_id = std::string("torchrun-") + elastic;
  else if (slurm != nullptr && *slurm != '\0')
    job_id = std::string("slurm-") + slurm;
  return std::filesystem::current_path() / "outputs" / "lrhost" /
         run_dir_name(recipe, std::chrono::system_clock::now(), job_id);
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

}  // namespace lrhost::launch
