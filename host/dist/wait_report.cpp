// Sentences about waiting ranks. Nodes are counted as the launcher places ranks: node k holds ranks
// k*L .. k*L+L-1 with L = LOCAL_WORLD_SIZE, the same rule torchrun uses for uniform nodes.
#include "host/dist/wait_report.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>

namespace lrhost::dist {
namespace {

std::string seconds(std::chrono::milliseconds time) {
  return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(time).count()) + " s";
}

int node_of(int rank, const RankEnv& env) {
  return rank / std::max(1, env.local_world_size);
}

int node_count(const RankEnv& env) {
  return (env.world_size + env.local_world_size - 1) / std::max(1, env.local_world_size);
}

std::string node_command(int node, const RankEnv& env) {
  std::string ranks = env.device == "cuda" ? "--gpus " + std::to_string(env.local_world_size)
                                           : "--nproc " + std::to_string(env.local_world_size) + " --device cpu";
  return "lrhost " + ranks + " --nnodes " + std::to_string(node_count(env)) + " --node-rank " + std::to_string(node) +
         " --master-addr " + env.master_addr + " --master-port " + std::to_string(env.master_port) + " RECIPE ...";
}

// Whole seconds >= 1 from `name`, or `fallback` when unset.
std::chrono::milliseconds seconds_from_environment(const char* name, int fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return std::chrono::seconds(fallback);
  char* end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < 1 || value > 1'000'000)
    throw util::ConfigError(std::string("environment variable ") + name + "='" + text +
                            "' is not a whole number of seconds >= 1");
  return std::chrono::seconds(value);
}

}  // namespace

WaitTiming wait_timing_from_environment() {
  return {.rendezvous_timeout = seconds_from_environment("LRHOST_RENDEZVOUS_TIMEOUT_S", 120),
          .report_interval = seconds_from_environment("LRHOST_WAIT_REPORT_S", 10)};
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string text;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!text.empty()) text += ", ";
    text += std::to_string(ranks[i]);
    if (j > i) text += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return (ranks.size() == 1 ? "rank " : "ranks ") + text;
}

std::string describe_missing(const std::vector<int>& missing, const RankEnv& env) {
  std::map<int, std::vector<int>> by_node;
  for (int rank : missing) by_node[node_of(rank, env)].push_back(rank);
  std::string text;
  for (const auto& [node, ranks] : by_node) {
    int node_size = std::min(env.local_world_size, env.world_size - node * env.local_world_size);
    if (!text.empty()) text += ", ";
    if (static_cast<int>(ranks.size()) == node_size && node_count(env) > 1)
      text += "node " + std::to_string(node) + " (" + rank_list(ranks) + ")";
    else
      text += rank_list(ranks) + (node_count(env) > 1 ? " (node " + std::to_string(node) + ")" : "");
  }
  return text;
}

std::string rendezvous_waiting_line(const std::vector<int>& missing, const RankEnv& env, const WaitTiming& timing,
                                    std::chrono::seconds waited) {
  return "rendezvous: waiting for " + describe_missing(missing, env) + " for " + std::to_string(waited.count()) +
         " s; " + std::to_string(env.world_size - static_cast<int>(missing.size())) + " of " +
         std::to_string(env.world_size) + " ranks arrived (timeout " + seconds(timing.rendezvous_timeout) + ")";
}

util::Error rendezvous_timeout_error(const std::vector<int>& missing, const RankEnv& env, const WaitTiming& timing) {
  std::string message = "rendezvous timed out after " + seconds(timing.rendezvous_timeout) +
                        " (--rendezvous-timeout) on rank " + std::to_string(env.rank) + ": " +
                        describe_missing(missing, env) + " never arrived";
  int first_node = missing.empty() ? 0 : node_of(missing.front(), env);
  bool whole_node = describe_missing(missing, env).starts_with("node ");
  std::string hint;
  if (!env.store_hosted)
    hint = "start the missing ranks with RANK, WORLD_SIZE=" + std::to_string(env.world_size) +
           ", MASTER_ADDR=" + env.master_addr + " and MASTER_PORT=" + std::to_string(env.master_port);
  else if (whole_node)
    hint = "node " + std::to_string(first_node) + " was not started (or cannot reach " + env.master_addr + ":" +
           std::to_string(env.master_port) + "); start it with `" + node_command(first_node, env) +
           "` (this node's command with its own --node-rank)";
  else
    hint =
        "those ranks were started but did not reach the store: see their logs (logs/rank<R>.log) and their "
        "node's launcher output";
  return util::Error(message, hint);
}

std::string store_waiting_line(const RankEnv& env, const WaitTiming& timing, std::chrono::seconds waited) {
  return "rendezvous: waiting for the store of node 0 at " + env.master_addr + ":" + std::to_string(env.master_port) +
         " for " + std::to_string(waited.count()) + " s (timeout " + seconds(timing.rendezvous_timeout) + ")";
}

util::Error store_unreachable_error(const RankEnv& env, const WaitTiming& timing, const std::string& cause) {
  std::string where = env.master_addr + ":" + std::to_string(env.master_port);
  std::string message = "rank " + std::to_string(env.rank) + " could not reach the rendezvous store at " + where +
                        " within " + seconds(timing.rendezvous_timeout) + " (--rendezvous-timeout): " + cause;
  std::string hint = env.store_hosted
                         ? "node 0's launcher hosts the store: start node 0 with `" + node_command(0, env) +
                               "`, and check that " + where + " is node 0's address and reachable from here"
                         : "rank 0 hosts the store: check that it runs and that MASTER_ADDR/MASTER_PORT "
                           "name its host and a free port";
  return util::Error(message, hint);
}

std::string laggards_text(std::int64_t number, const std::vector<PeerProgress>& peers) {
  std::vector<int> behind;
  std::string where;
  for (const auto& peer : peers) {
    if (peer.started && *peer.started >= number) continue;
    behind.push_back(peer.rank);
    if (!where.empty()) where += ", ";
    where += "rank " + std::to_string(peer.rank) +
             (peer.started ? " is at collective #" + std::to_string(*peer.started) : " has not published any progress");
  }
  if (behind.empty())
    return "every other rank started it (a rank may be stuck inside it, or the network between ranks is down)";
  return rank_list(behind) + " never reached it (" + where + " of this group, this is #" + std::to_string(number) + ")";
}

}  // namespace lrhost::dist
