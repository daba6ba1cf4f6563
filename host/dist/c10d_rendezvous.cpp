// Store connection with retries, the arrival wait, and the progress beacon. Every wait is sliced
// into steps no longer than the report interval, so a rank that waits says so on time and a
// deadline is never overshot by more than one step.
#include "host/dist/c10d_rendezvous.hpp"

#include <c10/util/Logging.h>
#include <spdlog/spdlog.h>
#include <unistd.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <algorithm>
#include <array>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "host/dist/wait_report.hpp"
#include "host/util/error.hpp"

namespace lrhost::dist {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::string one_line(const std::exception& error) {
  std::string what = error.what();
  if (const auto* torch_error = dynamic_cast<const c10::Error*>(&error)) what = torch_error->what_without_backtrace();
  return what.substr(0, what.find('\n'));
}

std::chrono::seconds whole_seconds(Clock::duration time) {
  return std::chrono::duration_cast<std::chrono::seconds>(time);
}

std::string arrival_key(int rank) {
  return "lrhost/rendezvous/arrived/" + std::to_string(rank);
}

// c10d logs every failed connection attempt as an error, with the exception's C++ backtrace (dozens
// of frames); while the rank retries on purpose, says itself every interval that it waits, and ends
// with one clear error, those lines are noise, so c10's log level is raised to FATAL meanwhile.
class QuietC10dLogs {
 public:
  QuietC10dLogs() : saved_(FLAGS_caffe2_log_level) { FLAGS_caffe2_log_level = std::max(saved_, 3); }
  ~QuietC10dLogs() { FLAGS_caffe2_log_level = saved_; }
  QuietC10dLogs(const QuietC10dLogs&) = delete;
  QuietC10dLogs& operator=(const QuietC10dLogs&) = delete;

 private:
  int saved_;
};

c10::intrusive_ptr<c10d::TCPStore> connect_store(const RankEnv& env, const WaitTiming& timing, Clock::time_point start,
                                                 Clock::time_point deadline) {
  bool host_it = env.rank == 0 && !env.store_hosted;
  QuietC10dLogs quiet;
  while (true) {
    c10d::TCPStoreOptions options;
    options.port = static_cast<std::uint16_t>(env.master_port);
    options.isServer = host_it;
    options.numWorkers = std::nullopt;
    options.waitWorkers = false;
    auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    options.timeout = std::clamp(left, milliseconds(100), timing.report_interval);
    try {
      return c10::make_intrusive<c10d::TCPStore>(env.master_addr, options);
    } catch (const std::exception& error) {
      if (host_it)
        throw util::Error("rank 0 could not host the rendezvous store on " + env.master_addr + ":" +
                              std::to_string(env.master_port) + ": " + one_line(error),
                          "is another job using MASTER_PORT " + std::to_string(env.master_port) + "? choose another");
      if (Clock::now() >= deadline) {
        // c10d retries a refused connection until its (sliced) timeout, so "timed out after 1000ms"
        // only means that nothing answered; the slice length would confuse next to the real timeout.
        std::string what = one_line(error);
        throw store_unreachable_error(env, timing,
                                      what.find("timed out") != std::string::npos ? "nothing answered there" : what);
      }
      if (env.local_rank == 0) spdlog::warn(store_waiting_line(env, timing, whole_seconds(Clock::now() - start)));
    }
  }
}

std::vector<int> missing_ranks(c10d::Store& store, int world_size) {
  std::vector<int> missing;
  for (int rank = 0; rank < world_size; ++rank)
    if (!store.check({arrival_key(rank)})) missing.push_back(rank);
  return missing;
}

void wait_for_every_rank(c10d::Store& store, const RankEnv& env, const WaitTiming& timing, Clock::time_point start,
                         Clock::time_point deadline) {
  std::vector<std::string> keys;
  for (int rank = 0; rank < env.world_size; ++rank) keys.push_back(arrival_key(rank));
  std::array<char, 256> host{};
  gethostname(host.data(), host.size() - 1);
  auto next_report = start + timing.report_interval;
  try {
    store.set(arrival_key(env.rank), std::string(host.data()));
    while (!store.check(keys)) {
      auto now = Clock::now();
      if (now >= deadline) throw rendezvous_timeout_error(missing_ranks(store, env.world_size), env, timing);
      if (now >= next_report) {
        if (env.local_rank == 0)
          spdlog::warn(
              rendezvous_waiting_line(missing_ranks(store, env.world_size), env, timing, whole_seconds(now - start)));
        next_report += timing.report_interval;
      }
      std::this_thread::sleep_for(milliseconds(50));
    }
  } catch (const util::Error&) {
    throw;
  } catch (const std::exception& error) {
    throw util::Error("rank " + std::to_string(env.rank) + " lost the connection to the rendezvous store at " +
                          env.master_addr + ":" + std::to_string(env.master_port) + ": " + one_line(error),
                      "the store lives in node 0's launcher (or rank 0 under torchrun): did it stop?");
  }
}

}  // namespace

c10::intrusive_ptr<c10d::Store> rendezvous(const RankEnv& env, const WaitTiming& timing) {
  auto start = Clock::now();
  auto deadline = start + timing.rendezvous_timeout;
  auto store = connect_store(env, timing, start, deadline);
  wait_for_every_rank(*store, env, timing, start, deadline);
  store->setTimeout(env.timeout);
  return store;
}

// What the beacon's thread shares with its owner; the thread keeps it alive, so an owner that gives
// up waiting for a thread stuck in a store call can leave it behind safely.
struct ProgressBeacon::Shared {
  std::atomic<std::int64_t> started{0};
  std::mutex mutex;
  std::condition_variable changed;
  bool stop = false;
  bool finished = false;
};

ProgressBeacon::ProgressBeacon(const c10::intrusive_ptr<c10d::Store>& store, std::string prefix, int rank,
                               milliseconds interval)
    : shared_(std::make_shared<Shared>()), prefix_(std::move(prefix)), rank_(rank) {
  std::string key = prefix_ + "/progress/" + std::to_string(rank_);
  c10::intrusive_ptr<c10d::Store> own;
  try {
    store->set(key, "0");
    own = store->clone();  // its own connection: never blocks behind, or interleaves with, the backend's
  } catch (const std::exception& error) {
    spdlog::debug("progress beacon of '{}' disabled: {}", prefix_, one_line(error));
    shared_->finished = true;
    return;
  }
  std::thread([shared = shared_, own, key, interval] {
    std::int64_t published = 0;
    std::unique_lock<std::mutex> lock(shared->mutex);
    while (!shared->changed.wait_for(lock, interval, [&] { return shared->stop; })) {
      std::int64_t now = shared->started.load(std::memory_order_relaxed);
      if (now == published) continue;
      lock.unlock();
      try {
        own->set(key, std::to_string(now));
        published = now;
      } catch (const std::exception&) {
        lock.lock();
        break;  // the store is gone: nobody is left to read the count
      }
      lock.lock();
    }
    shared->finished = true;
    shared->changed.notify_all();
  }).detach();
}

ProgressBeacon::~ProgressBeacon() {
  std::unique_lock<std::mutex> lock(shared_->mutex);
  shared_->stop = true;
  shared_->changed.notify_all();
  // A thread inside a store call to a store that stopped answering could take up to the store's
  // timeout; the process must not wait that long on its way out, so it waits a bounded time.
  shared_->changed.wait_for(lock, std::chrono::seconds(2), [&] { return shared_->finished; });
}

std::int64_t ProgressBeacon::started() {
  return shared_->started.fetch_add(1, std::memory_order_relaxed) + 1;
}

std::vector<std::optional<std::int64_t>> ProgressBeacon::published(c10d::Store& store, int group_size) const {
  std::vector<std::optional<std::int64_t>> counts(static_cast<std::size_t>(group_size));
  for (int rank = 0; rank < group_size; ++rank) {
    std::string key = prefix_ + "/progress/" + std::to_string(rank);
    if (!store.check({key})) continue;
    auto value = store.get(key);
    counts[static_cast<std::size_t>(rank)] = std::stoll(std::string(value.begin(), value.end()));
  }
  return counts;
}

}  // namespace lrhost::dist
