// Parsing of the distributed environment variables.
#include "host/dist/rank_env.hpp"

#include <cstdlib>
#include <optional>

#include "host/util/error.hpp"

namespace lrhost::dist {
namespace {

std::optional<std::string> env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

int env_int(const char* name, int fallback, int minimum) {
  auto text = env(name);
  if (!text) return fallback;
  char* end = nullptr;
  long value = std::strtol(text->c_str(), &end, 10);
  if (*end != '\0' || value < minimum || value > 1'000'000)
    throw util::ConfigError(std::string("environment variable ") + name + "='" + *text +
                            "' is not a valid integer >= " + std::to_string(minimum));
  return static_cast<int>(value);
}

}  // namespace

RankEnv rank_env_from_environment() {
  RankEnv e;
  e.world_size = env_int("WORLD_SIZE", 1, 1);
  e.rank = env_int("RANK", 0, 0);
  e.local_world_size = env_int("LOCAL_WORLD_SIZE", e.world_size, 1);
  e.local_rank = env_int("LOCAL_RANK", e.rank % e.local_world_size, 0);
  e.node_rank = env_int("GROUP_RANK", e.rank / e.local_world_size, 0);
  if (e.rank >= e.world_size)
    throw util::ConfigError("RANK=" + std::to_string(e.rank) +
                            " is not below WORLD_SIZE=" + std::to_string(e.world_size));
  if (e.local_rank >= e.local_world_size)
    throw util::ConfigError("LOCAL_RANK=" + std::to_string(e.local_rank) +
                            " is not below LOCAL_WORLD_SIZE=" + std::to_string(e.local_world_size));
  e.master_addr = env("MASTER_ADDR").value_or("127.0.0.1");
  e.master_port = env_int("MASTER_PORT", 0, 0);
  if (e.world_size > 1 && e.master_port == 0)
    throw util::ConfigError("WORLD_SIZE=" + std::to_string(e.world_size) + " but MASTER_PORT is not set",
                            "start ranks with `lrhost --nproc N RECIPE`, or set MASTER_ADDR and MASTER_PORT");
  e.store_hosted = env("LRHOST_STORE_HOSTED").value_or("0") == "1";
  e.device = env("LRHOST_DEVICE").value_or("auto");
  if (e.device != "auto" && e.device != "cpu" && e.device != "cuda")
    throw util::ConfigError("LRHOST_DEVICE='" + e.device + "' must be 'auto', 'cpu' or 'cuda'");
  e.cuda_backend = env("LRHOST_BACKEND").value_or("nccl");
  if (e.cuda_backend != "nccl" && e.cuda_backend != "gloo")
    throw util::ConfigError("LRHOST_BACKEND='" + e.cuda_backend + "' must be 'nccl' or 'gloo'");
  e.timeout = std::chrono::milliseconds(static_cast<int64_t>(env_int("LRHOST_TIMEOUT_S", 600, 1)) * 1000);
  return e;
}

}  // namespace lrhost::dist
