// Recording and printing the command that continues an interrupted run; see resume_hint.hpp.
#include "host/launch/resume_hint.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include "host/io/atomic_dir.hpp"
#include "host/util/error.hpp"
#include "host/util/save_on_signal.hpp"
#include "host/util/strings.hpp"

namespace lrhost::launch {
namespace fs = std::filesystem;

namespace {

// The handler may only read memory and call write(): the text is prepared here, in one of two
// buffers, and published by switching `current`, so a signal never sees a half-written one.
constexpr std::size_t kMaxText = 4096;
char buffers[2][kMaxText];
std::size_t lengths[2] = {0, 0};
std::atomic<int> current{-1};

void publish(const std::string& text) {
  const int next = current.load() == 0 ? 1 : 0;
  const std::size_t length = std::min(text.size(), kMaxText);
  std::memcpy(buffers[next], text.data(), length);
  lengths[next] = length;
  current.store(next);
}

void on_interrupt(int signal) {
  const int index = current.load();
  if (index >= 0) {
    // Best effort: nothing to do about a failed write in a handler.
    [[maybe_unused]] ssize_t written = ::write(STDERR_FILENO, buffers[index], lengths[index]);
  }
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

}  // namespace

std::string resume_flags(const LaunchOptions& options, int threads) {
  const LaunchOptions defaults;
  std::string flags = options.device == "cuda"
                          ? "--gpus " + std::to_string(options.nproc)
                          : "--nproc " + std::to_string(options.nproc) + " --device " + options.device;
  auto add = [&](const std::string& flag, const std::string& value) {
    flags += " " + flag + " " + util::shell_quoted(value);
  };
  if (options.nnodes > 1) {
    add("--nnodes", std::to_string(options.nnodes));
    add("--node-rank", std::to_string(options.node_rank));
    add("--master-addr", options.master_addr);
    add("--master-port", std::to_string(options.master_port));
  }
  if (options.max_restarts != defaults.max_restarts) add("--max-restarts", std::to_string(options.max_restarts));
  if (options.timeout_s != defaults.timeout_s) add("--timeout", std::to_string(options.timeout_s));
  if (options.rendezvous_timeout_s != defaults.rendezvous_timeout_s)
    add("--rendezvous-timeout", std::to_string(options.rendezvous_timeout_s));
  if (const std::string signals = util::format_save_signals(options.save_signals);
      signals != util::format_save_signals(util::parse_save_signals(util::kDefaultSaveSignals)))
    add("--save-on-signal", signals);
  if (threads > 0) add("--threads", std::to_string(threads));
  return flags;
}

std::string resume_flags_in_process(const std::string& device, int threads) {
  std::string flags;
  if (device != "auto") flags = "--device " + device;
  if (threads > 0) flags += (flags.empty() ? "" : " ") + std::string("--threads ") + std::to_string(threads);
  return flags;
}

std::string resume_command(const fs::path& output_dir) {
  std::string command = "lrhost resume " + util::shell_quoted(fs::absolute(output_dir).lexically_normal().string());
  if (const char* flags = std::getenv(kResumeFlagsVariable); flags != nullptr && *flags != '\0')
    command += std::string(" ") + flags;
  return command;
}

void note_resumable(const fs::path& output_dir) {
  const std::string command = resume_command(output_dir);
  publish("\nlrhost: interrupted; continue this run from its newest checkpoint with:\n  " + command + "\n");
  const char* run_dir = std::getenv("LRHOST_RUN_DIR");
  if (run_dir == nullptr || *run_dir == '\0') return;
  try {
    io::write_file_atomic(fs::path(run_dir) / kResumeCommandFile, command + "\n");
  } catch (const std::exception& error) {
    spdlog::warn("cannot record the resume command in {}: {}", run_dir, util::describe(error));
  }
}

std::optional<std::string> recorded_resume_command(const fs::path& run_dir) {
  try {
    std::error_code ec;
    if (!fs::is_regular_file(run_dir / kResumeCommandFile, ec)) return std::nullopt;
    std::string text = io::read_text_file(run_dir / kResumeCommandFile);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    if (text.empty()) return std::nullopt;
    return text;
  } catch (const std::exception&) {
    return std::nullopt;  // an unreadable hint is no hint; the interrupt report goes on without it
  }
}

void print_resume_command_on_interrupt() {
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

}  // namespace lrhost::launch
