// What the launcher is asked to do, and the checks that turn the command line's launcher flags into
// it: how many ranks per node on which device (--nproc, --gpus, --device), where the job's other
// nodes are (--nnodes, --node-rank, --master-addr, --master-port), restarts and timeouts. Every
// inconsistent combination is a util::ConfigError naming the flags and how to fix them.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace lrhost::launch {

// The device flags as given on the command line.
struct DeviceFlags {
  std::optional<int> nproc;     // --nproc
  std::optional<int> gpus;      // --gpus
  std::string device = "auto";  // --device: auto | cpu | cuda
};

struct DeviceChoice {
  std::optional<int> nproc;  // ranks per node; nullopt: run the recipe in this process
  std::string device;        // "cpu" or "cuda"
};

// Resolves the flags against the number of CUDA devices on this machine. Asking for more GPUs than
// exist, or --gpus with --device cpu, is an error with a hint.
DeviceChoice choose_devices(const DeviceFlags& flags, int cuda_devices);

struct LaunchOptions {
  std::string recipe;
  std::vector<std::string> rank_arguments;  // argv[1..] of every rank: run RECIPE overrides... options
  int nproc = 1;                            // ranks on this node
  std::string device = "cpu";               // "cpu" or "cuda"
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;  // 0: a free port chosen by the launcher (single node only)
  int max_restarts = 0;
  int timeout_s = 600;             // collective timeout handed to the ranks
  int rendezvous_timeout_s = 120;  // how long ranks wait for every rank (every node) to arrive
  std::filesystem::path run_dir;
  // The launcher claimed run_dir (the default outputs/lrhost/<time>_<recipe>, not --run-dir or
  // $LRHOST_RUN_DIR): a job that fails before any rank started its run removes it (unused_run_dir.hpp).
  bool claimed_run_dir = false;
  // --save-on-signal: signals after which the ranks save a checkpoint and the job exits with
  // kPreemptedExitCode (save_on_signal.hpp); empty: none.
  std::vector<int> save_signals;
  bool overwrite = false;  // --overwrite, handed to the ranks (LRHOST_OVERWRITE)
  bool verbose = false;

  int world_size() const { return nnodes * nproc; }
};

// One line warning that `nproc` CPU ranks get fewer hardware threads than ranks (they then take turns
// on the cores, and a collective waits for the slowest); nullopt when they fit, on CUDA, or when the
// count is unknown (0).
std::optional<std::string> oversubscription_warning(int nproc, const std::string& device, unsigned hardware_threads);

// Checks the multi-node flags: node rank within --nnodes, a fixed --master-port for several
// nodes (each node must know it in advance), ports in range, non-negative restarts.
void check_launch_options(const LaunchOptions& options);

}  // namespace lrhost::launch
