// The environment a launched rank starts with: the launcher's own environment, minus anything a
// previous launch left in it, plus the torchrun-compatible placement variables (RANK, LOCAL_RANK,
// WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT) and lrhost's own
// (LRHOST_STORE_HOSTED, LRHOST_DEVICE, LRHOST_TIMEOUT_S, LRHOST_RUN_DIR, LRHOST_ERROR_FILE,
// LRHOST_RESTART_COUNT, LRHOST_LAUNCHER_PID). This is the whole contract between launcher and rank.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace lrhost::launch {

struct RankSpec {
  int rank = 0;
  int local_rank = 0;
  int world_size = 1;
  int local_world_size = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  std::string device = "cpu";
  int timeout_s = 600;
  std::filesystem::path run_dir;
  int restart_count = 0;
  long launcher_pid = 0;
  std::optional<int> omp_threads;  // OMP_NUM_THREADS, when the user did not set it
};

// `inherited` is "KEY=value" entries (as in environ); the result is the same form.
std::vector<std::string> rank_environment(const std::vector<std::string>& inherited, const RankSpec& spec);

// This process's environ as "KEY=value" entries.
std::vector<std::string> current_environment();

}  // namespace lrhost::launch
