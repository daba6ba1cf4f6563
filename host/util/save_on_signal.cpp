// Parsing and formatting of the --save-on-signal list. Only signals whose default action ends the
// process and that a scheduler or a user plausibly sends are accepted: SIGKILL and SIGSTOP cannot
// be caught, and SIGSEGV-like signals mean a crash, not a request.
#include "host/util/save_on_signal.hpp"

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstdlib>
#include <utility>

#include "host/util/error.hpp"

namespace lrhost::util {
namespace {

constexpr std::pair<const char*, int> kAccepted[] = {{"TERM", SIGTERM}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2},
                                                     {"HUP", SIGHUP},   {"INT", SIGINT},   {"XCPU", SIGXCPU}};

std::string accepted_list() {
  std::string text;
  for (const auto& [name, number] : kAccepted) text += std::string(text.empty() ? "" : ", ") + name;
  return text + " (with or without SIG, comma-separated), or none";
}

std::string trimmed_upper(std::string text) {
  auto not_space = [](unsigned char c) { return !std::isspace(c); };
  text.erase(text.begin(), std::find_if(text.begin(), text.end(), not_space));
  text.erase(std::find_if(text.rbegin(), text.rend(), not_space).base(), text.end());
  for (auto& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

}  // namespace

std::vector<int> parse_save_signals(const std::string& text, const std::string& option) {
  std::string whole = trimmed_upper(text);
  if (whole == "NONE") return {};
  std::vector<int> signals;
  std::size_t start = 0;
  while (true) {
    std::size_t comma = whole.find(',', start);
    std::string item =
        trimmed_upper(whole.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    std::string bare = item.starts_with("SIG") ? item.substr(3) : item;
    auto found = std::find_if(std::begin(kAccepted), std::end(kAccepted),
                              [&](const auto& entry) { return bare == entry.first; });
    if (found == std::end(kAccepted))
      throw util::ConfigError(option + " '" + text +
                                  "': " + (item.empty() ? "an empty signal name" : "'" + item + "'") +
                                  " is not a signal it accepts",
                              "give " + accepted_list() + "; the default is " + kDefaultSaveSignals);
    if (std::find(signals.begin(), signals.end(), found->second) == signals.end()) signals.push_back(found->second);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return signals;
}

std::string format_save_signals(const std::vector<int>& signals) {
  if (signals.empty()) return "none";
  std::string text;
  for (int signal : signals)
    for (const auto& [name, number] : kAccepted)
      if (number == signal) text += std::string(text.empty() ? "" : ",") + name;
  return text;
}

std::vector<int> save_signals_from_environment() {
  const char* value = std::getenv(kSaveOnSignalVariable);
  if (value == nullptr || *value == '\0') return parse_save_signals(kDefaultSaveSignals);
  return parse_save_signals(value, std::string("$") + kSaveOnSignalVariable);
}

}  // namespace lrhost::util
