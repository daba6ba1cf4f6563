// Where this process sits in a job, read from the torchrun-compatible environment (RANK,
// LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT) plus lrhost's own
// variables set by its launcher (LRHOST_STORE_HOSTED, LRHOST_DEVICE, LRHOST_TIMEOUT_S). With none
// of them set the process is rank 0 of a single-process job.
#pragma once
#include <chrono>
#include <string>

namespace lrhost::dist {

struct RankEnv {
  int rank = 0;
  int local_rank = 0;
  int world_size = 1;
  int local_world_size = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  // True when lrhost's launcher already runs the rendezvous store; under torchrun/Slurm rank 0
  // hosts it, as torch.distributed's env:// init does.
  bool store_hosted = false;
  std::string device = "auto";  // "cpu" | "cuda" | "auto" (cuda when available)
  // Collective backend for CUDA tensors: "nccl" (default) or "gloo" (e.g. two ranks sharing one
  // GPU, which NCCL refuses). CPU tensors always use Gloo. From LRHOST_BACKEND.
  std::string cuda_backend = "nccl";
  std::chrono::milliseconds timeout{600'000};

  // No rendezvous at all: a plain `lrhost RECIPE` run. (A launcher-started job of one rank still
  // goes through c10d, so `--gpus 1` exercises the same NCCL path as `--gpus 8`.)
  bool single_process() const { return world_size == 1 && master_port == 0; }
  bool single_node() const { return world_size == local_world_size; }
};

// Reads and validates the environment; inconsistent values (RANK >= WORLD_SIZE, a missing
// MASTER_PORT with WORLD_SIZE > 1, non-numbers) are util::ConfigError naming the variable.
RankEnv rank_env_from_environment();

}  // namespace lrhost::dist
