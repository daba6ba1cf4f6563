// Construction of a rank's environment. Every variable the launcher owns is first removed from the
// inherited set, so a launcher started from inside another lrhost job (or a shell with a stale
// RANK) never leaks the outer job's placement into its ranks.
#include "host/launch/rank_environment.hpp"

#include <algorithm>
#include <array>
#include <string_view>

#include "host/launch/run_dir.hpp"

extern char** environ;

namespace lrhost::launch {
namespace {

constexpr std::array<std::string_view, 17> kOwnedVariables{"RANK",
                                                           "LOCAL_RANK",
                                                           "WORLD_SIZE",
                                                           "LOCAL_WORLD_SIZE",
                                                           "GROUP_RANK",
                                                           "MASTER_ADDR",
                                                           "MASTER_PORT",
                                                           "LRHOST_STORE_HOSTED",
                                                           "LRHOST_DEVICE",
                                                           "LRHOST_TIMEOUT_S",
                                                           "LRHOST_RUN_DIR",
                                                           "LRHOST_ERROR_FILE",
                                                           "LRHOST_RESTART_COUNT",
                                                           "LRHOST_LAUNCHER_PID",
                                                           "TORCHELASTIC_RUN_ID",
                                                           "LRHOST_OVERWRITE",
                                                           "LRHOST_RENDEZVOUS_TIMEOUT_S"};

bool owned(std::string_view entry) {
  auto key = entry.substr(0, entry.find('='));
  return std::find(kOwnedVariables.begin(), kOwnedVariables.end(), key) != kOwnedVariables.end();
}

}  // namespace

std::vector<std::string> rank_environment(const std::vector<std::string>& inherited, const RankSpec& spec) {
  std::vector<std::string> env;
  for (const auto& entry : inherited)
    if (!owned(entry)) env.push_back(entry);
  auto set = [&env](const std::string& key, const std::string& value) { env.push_back(key + "=" + value); };
  const dist::RankEnv& p = spec.placement;
  set("RANK", std::to_string(p.rank));
  set("LOCAL_RANK", std::to_string(p.local_rank));
  set("WORLD_SIZE", std::to_string(p.world_size));
  set("LOCAL_WORLD_SIZE", std::to_string(p.local_world_size));
  set("GROUP_RANK", std::to_string(p.node_rank));
  set("MASTER_ADDR", p.master_addr);
  set("MASTER_PORT", std::to_string(p.master_port));
  set("LRHOST_STORE_HOSTED", "1");
  set("LRHOST_DEVICE", p.device);
  set("LRHOST_TIMEOUT_S", std::to_string(p.timeout.count() / 1000));
  set("LRHOST_RENDEZVOUS_TIMEOUT_S", std::to_string(spec.rendezvous_timeout.count()));
  set("LRHOST_RUN_DIR", spec.run_dir.string());
  set("LRHOST_ERROR_FILE", error_file_path(spec.run_dir, p.rank).string());
  set("LRHOST_RESTART_COUNT", std::to_string(spec.restart_count));
  set("LRHOST_LAUNCHER_PID", std::to_string(spec.launcher_pid));
  if (spec.overwrite) set("LRHOST_OVERWRITE", "1");
  if (spec.omp_threads) {
    std::erase_if(env, [](const std::string& entry) { return entry.starts_with("OMP_NUM_THREADS="); });
    set("OMP_NUM_THREADS", std::to_string(*spec.omp_threads));
  }
  return env;
}

std::vector<std::string> current_environment() {
  std::vector<std::string> env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) env.emplace_back(*entry);
  return env;
}

}  // namespace lrhost::launch
