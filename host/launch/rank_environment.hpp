// The environment a launched rank starts with: the launcher's own environment, minus anything a
// previous launch left in it, plus the torchrun-compatible placement variables (RANK, LOCAL_RANK,
// WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT) and lrhost's own
// (LRHOST_STORE_HOSTED, LRHOST_DEVICE, LRHOST_TIMEOUT_S, LRHOST_RENDEZVOUS_TIMEOUT_S, LRHOST_RUN_DIR,
// LRHOST_ERROR_FILE, LRHOST_RESTART_COUNT, LRHOST_LAUNCHER_PID, and LRHOST_OVERWRITE=1 for
// --overwrite). This is the whole contract between launcher and rank.
#pragma once
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "host/dist/rank_env.hpp"

namespace lrhost::launch {

// The placement half is dist::RankEnv, the struct the rank reads back from the same variables
// (dist/rank_env.hpp), so both sides of the contract share one definition.
struct RankSpec {
  dist::RankEnv placement;  // store_hosted and cuda_backend are not written: the launcher hosts
                            // the store, and LRHOST_BACKEND passes through from the user
  std::filesystem::path run_dir;
  std::chrono::seconds rendezvous_timeout{120};  // read back by dist::wait_timing_from_environment()
  int restart_count = 0;
  long launcher_pid = 0;
  bool overwrite = false;          // --overwrite: a fresh run may replace the output folder's checkpoints
  std::optional<int> omp_threads;  // OMP_NUM_THREADS, when the user did not set it
};

// `inherited` is "KEY=value" entries (as in environ); the result is the same form.
std::vector<std::string> rank_environment(const std::vector<std::string>& inherited, const RankSpec& spec);

// This process's environ as "KEY=value" entries.
std::vector<std::string> current_environment();

}  // namespace lrhost::launch
