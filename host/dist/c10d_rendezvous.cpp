// Store connection with retries, the arrival wait, and the progress beacon. Every wait is sliced
// into steps no longer than the report interval, so a rank that waits says so on time and a
// deadline is never overshot by more than one step.
#include "host/dist/c10d_rendezvous.hpp"

#include <c10/util/Logging.h>
#include <netdb.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <condition_variable>
#include <cstring>
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
// of frames); the rank reports its own wait and ends with one clear error, so c10's log level is
// raised to FATAL while it connects.
class QuietC10dLogs {
 public:
  QuietC10dLogs() : saved_(FLAGS_caffe2_log_level) { FLAGS_caffe2_log_level = std::max(saved_, 3); }
  ~QuietC10dLogs() { FLAGS_caffe2_log_level = saved_; }
  QuietC10dLogs(const QuietC10dLogs&) = delete;
  QuietC10dLogs& operator=(const QuietC10dLogs&) = delete;

 private:
  int saved_;
};

// Whether something accepts TCP connections at host:port within `timeout`: a plain socket probe, so
// that the wait for a store that is not up yet is timed and reported here, to the deadline. (c10d's
// own client retries with a growing backoff and overshot a 10 s timeout by 17 s when tried.) The
// probe connection is closed at once; the store server just sees a client leave. "" when it
// connected, otherwise why not.
std::string probe(const std::string& host, int port, milliseconds timeout) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int error = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); error != 0)
    return std::string("cannot resolve '") + host + "': " + gai_strerror(error);
  std::string why = "nothing accepted a connection there";
  for (addrinfo* address = found; address != nullptr; address = address->ai_next) {
    int fd = socket(address->ai_family, address->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, address->ai_protocol);
    if (fd < 0) continue;
    int result = connect(fd, address->ai_addr, address->ai_addrlen);
    if (result != 0 && errno == EINPROGRESS) {
      pollfd waiting{fd, POLLOUT, 0};
      int error = 0;
      socklen_t length = sizeof error;
      if (poll(&waiting, 1, static_cast<int>(timeout.count())) == 1 &&
          getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 && error == 0)
        result = 0;
      else if (error != 0)
        why = std::strerror(error);
    } else if (result != 0) {
      why = std::strerror(errno);
    }
    close(fd);
    if (result == 0) {
      freeaddrinfo(found);
      return "";
    }
  }
  freeaddrinfo(found);
  return why;
}

c10::intrusive_ptr<c10d::TCPStore> store_client(const RankEnv& env, bool host_it, milliseconds timeout) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(env.master_port);
  options.isServer = host_it;
  options.numWorkers = std::nullopt;
  options.waitWorkers = false;
  options.timeout = timeout;
  return c10::make_intrusive<c10d::TCPStore>(env.master_addr, options);
}

c10::intrusive_ptr<c10d::TCPStore> connect_store(const RankEnv& env, const WaitTiming& timing, Clock::time_point start,
                                                 Clock::time_point deadline) {
  if (env.rank == 0 && !env.store_hosted) {  // torchrun/Slurm: rank 0 hosts the store itself
    try {
      return store_client(env, true, env.timeout);
    } catch (const std::exception& error) {
      throw util::Error("rank 0 could not host the rendezvous store on " + env.master_addr + ":" +
                            std::to_string(env.master_port) + ": " + one_line(error),
                        "is another job using MASTER_PORT " + std::to_string(env.master_port) + "? choose another");
    }
  }
  QuietC10dLogs quiet;
  auto next_report = start + timing.report_interval;
  std::string why;
  while (true) {
    auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    why = probe(env.master_addr, env.master_port, std::clamp(left, milliseconds(1), milliseconds(1000)));
    if (why.empty()) {
      try {
        // Something listens: the store answers within moments, unless it is not a store at all.
        return store_client(env, false, std::max(left, milliseconds(5000)));
      } catch (const std::exception& error) {
        why = "a connection opened but the store did not answer: " + one_line(error);
      }
    }
    auto now = Clock::now();
    if (now >= deadline) throw store_unreachable_error(env, timing, why);
    if (now >= next_report) {
      if (env.local_rank == 0) spdlog::warn(store_waiting_line(env, timing, whole_seconds(now - start)));
      next_report += timing.report_interval;
    }
    std::this_thread::sleep_for(std::min(milliseconds(200), std::chrono::duration_cast<milliseconds>(deadline - now)));
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
