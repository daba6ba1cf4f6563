// The run folder of `lrhost eval`; see eval_run_dir.hpp.
#include "host/cli/eval_run_dir.hpp"

#include <chrono>
#include <cstdlib>

#include "host/launch/run_dir.hpp"

namespace lrhost::cli {
namespace fs = std::filesystem;

namespace {

bool is_file(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

// checkpoints/<step> (after resolving `last` and other links) -> the run folder; else the folder itself.
fs::path run_of_step_folder(const fs::path& step) {
  std::error_code ec;
  fs::path real = fs::canonical(step, ec);
  if (ec) real = fs::absolute(step).lexically_normal();
  return real.parent_path().filename() == "checkpoints" ? real.parent_path().parent_path() : real;
}

}  // namespace

std::optional<fs::path> evaluated_run_folder(const fs::path& checkpoint) {
  if (is_file(checkpoint / "checkpoints" / "last" / "pretrained_model" / "config.json"))
    return fs::absolute(checkpoint).lexically_normal();
  if (is_file(checkpoint / "pretrained_model" / "config.json")) return run_of_step_folder(checkpoint);
  if (is_file(checkpoint / "config.json")) {
    std::error_code ec;
    fs::path real = fs::canonical(checkpoint, ec);
    if (ec) real = fs::absolute(checkpoint).lexically_normal();
    return real.filename() == "pretrained_model" ? run_of_step_folder(real.parent_path()) : real;
  }
  return std::nullopt;
}

void choose_eval_run_dir(std::optional<std::string>& run_dir, const fs::path& checkpoint) {
  const char* inherited = std::getenv("LRHOST_RUN_DIR");
  if (run_dir || (inherited != nullptr && *inherited != '\0')) return;
  auto run = evaluated_run_folder(checkpoint);
  if (!run) return;
  const std::string name = launch::run_dir_name("eval", std::chrono::system_clock::now());
  run_dir = launch::claim_new_folder(*run / "eval" / "logs", name).string();
}

}  // namespace lrhost::cli
