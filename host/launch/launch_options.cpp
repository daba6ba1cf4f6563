// Checks of the launcher flags. Kept apart from CLI11 so the rules are unit-testable without
// parsing a command line, and so the CUDA device count is a parameter, not a global.
#include "host/launch/launch_options.hpp"

#include <cstdlib>

#include "host/util/error.hpp"

namespace lrhost::launch {

DeviceChoice choose_devices(const DeviceFlags& flags, int cuda_devices) {
  if (flags.device != "auto" && flags.device != "cpu" && flags.device != "cuda")
    throw util::ConfigError("--device expects auto, cpu or cuda, got '" + flags.device + "'");
  if (flags.gpus && flags.nproc)
    throw util::ConfigError("--gpus and --nproc were both given",
                            "--gpus N is short for --nproc N --device cuda; give one of them");
  if (flags.gpus && flags.device == "cpu")
    throw util::ConfigError("--gpus " + std::to_string(*flags.gpus) + " asks for CUDA ranks but --device cpu was given",
                            "use --nproc " + std::to_string(*flags.gpus) + " --device cpu for CPU ranks");
  for (auto [flag, value] : {std::pair{"--nproc", flags.nproc}, std::pair{"--gpus", flags.gpus}})
    if (value && *value < 1)
      throw util::ConfigError(std::string(flag) + " expects a positive number of ranks, got " + std::to_string(*value));

  DeviceChoice choice;
  choice.nproc = flags.gpus ? flags.gpus : flags.nproc;
  choice.device = flags.gpus ? "cuda" : flags.device;
  if (choice.device == "auto") choice.device = cuda_devices > 0 ? "cuda" : "cpu";

  if (choice.device == "cuda") {
    int wanted = choice.nproc.value_or(1);
    // With LRHOST_BACKEND=gloo ranks may share GPUs (NCCL refuses that); at least one must exist.
    const char* backend = std::getenv("LRHOST_BACKEND");
    bool may_share = backend != nullptr && std::string(backend) == "gloo" && !flags.gpus && cuda_devices > 0;
    if (wanted > cuda_devices && !may_share) {
      std::string asked = flags.gpus    ? "--gpus " + std::to_string(*flags.gpus)
                          : flags.nproc ? "--nproc " + std::to_string(*flags.nproc) + " --device cuda"
                                        : std::string("--device cuda");
      throw util::ConfigError(asked + " needs " + std::to_string(wanted) + " GPU(s) per node, but this machine has " +
                                  std::to_string(cuda_devices) + " GPU(s)",
                              "use --nproc " + std::to_string(wanted) + " --device cpu to run CPU ranks" +
                                  (cuda_devices > 0 ? ", or at most --gpus " + std::to_string(cuda_devices) : ""));
    }
  }
  return choice;
}

void check_launch_options(const LaunchOptions& options) {
  if (options.nnodes < 1) throw util::ConfigError("--nnodes expects at least 1, got " + std::to_string(options.nnodes));
  if (options.node_rank < 0 || options.node_rank >= options.nnodes)
    throw util::ConfigError("--node-rank " + std::to_string(options.node_rank) + " is not in [0, --nnodes " +
                            std::to_string(options.nnodes) + ")");
  if (options.master_port < 0 || options.master_port > 65535)
    throw util::ConfigError("--master-port expects a TCP port in [0, 65535], got " +
                            std::to_string(options.master_port));
  if (options.nnodes > 1 && options.master_port == 0)
    throw util::ConfigError("--nnodes " + std::to_string(options.nnodes) + " needs a fixed --master-port",
                            "every node must know the port in advance: give all nodes the same "
                            "--master-addr HOST_OF_NODE_0 --master-port PORT (e.g. 29500)");
  if (options.nnodes > 1 && (options.master_addr.empty()))
    throw util::ConfigError("--nnodes " + std::to_string(options.nnodes) + " needs --master-addr (node 0's address)");
  if (options.max_restarts < 0)
    throw util::ConfigError("--max-restarts expects 0 or more, got " + std::to_string(options.max_restarts));
  if (options.timeout_s < 1)
    throw util::ConfigError("--timeout expects a positive number of seconds, got " + std::to_string(options.timeout_s));
  if (options.rendezvous_timeout_s < 1)
    throw util::ConfigError("--rendezvous-timeout expects a positive number of seconds, got " +
                            std::to_string(options.rendezvous_timeout_s));
}

std::optional<std::string> oversubscription_warning(int nproc, const std::string& device, unsigned hardware_threads) {
  if (device != "cpu" || hardware_threads == 0 || static_cast<unsigned>(nproc) <= hardware_threads) return std::nullopt;
  return "--nproc " + std::to_string(nproc) + " starts " + std::to_string(nproc) + " CPU ranks but this machine has " +
         std::to_string(hardware_threads) +
         " hardware thread(s): ranks will take turns on the cores and every "
         "collective waits for the slowest";
}

}  // namespace lrhost::launch
