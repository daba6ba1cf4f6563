// pi05's state prompt: bins and text exactly as numpy and Python compute them; see state_prompt.hpp.
#include "host/policy/state_prompt.hpp"

#include <array>
#include <string_view>

#include "host/util/error.hpp"

namespace lrhost::policy {
namespace {

// The characters Python's str.strip() removes (str.isspace): ASCII whitespace, the separators
// \x1c-\x1f, and the Unicode spaces, as UTF-8.
constexpr std::array<std::string_view, 19> kPythonSpaces{
    " ",      "\t",     "\n",     "\r",     "\v",     "\f",     "\x1c",   "\x1d",   "\x1e",  "\x1f",
    "\u0085", "\u00a0", "\u1680", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000", "\u2000"};

std::size_t space_prefix(std::string_view text) {
  for (auto space : kPythonSpaces)
    if (text.starts_with(space)) return space.size();
  // U+2001..U+200A (E2 80 81..8A), after U+2000 above.
  if (text.size() >= 3 && text[0] == '\xe2' && text[1] == '\x80' && text[2] >= '\x81' && text[2] <= '\x8a') return 3;
  return 0;
}

std::size_t space_suffix(std::string_view text) {
  for (std::size_t width : {std::size_t{1}, std::size_t{2}, std::size_t{3}})
    if (text.size() >= width && space_prefix(text.substr(text.size() - width)) == width) return width;
  return 0;
}

}  // namespace

torch::Tensor state_bins(const torch::Tensor& state) {
  // digitize counts the edges -1 + k/128 (k = 0..255, exact in float64) at or below x. x·128 is exact
  // in float64 for any float32/64 input, so floor(x·128) + 128 is that count minus one without the
  // rounding of (x + 1)·128 for |x| < 2^-54; NaN counts every edge (numpy's digitize), giving 255.
  auto x = state.detach().to(torch::kCPU, torch::kDouble);
  auto bins = (torch::floor(x * 128.0) + 128.0).clamp(-1.0, 255.0);
  bins = torch::where(torch::isnan(x), torch::full_like(bins, 255.0), bins);
  return bins.to(torch::kLong);
}

std::string clean_task_text(const std::string& task) {
  std::string_view text = task;
  while (std::size_t n = space_prefix(text)) text.remove_prefix(n);
  while (std::size_t n = space_suffix(text)) text.remove_suffix(n);
  std::string out(text);
  for (char& c : out)
    if (c == '_' || c == '\n') c = ' ';
  return out;
}

std::vector<std::string> state_prompts(const std::vector<std::string>& tasks, const torch::Tensor& state) {
  if (state.dim() != 2)
    throw util::DataError("pi05 state prompt: observation.state must be (batch, state_dim), got " +
                          std::to_string(state.dim()) + " dimensions");
  if (static_cast<int64_t>(tasks.size()) != state.size(0))
    throw util::DataError("pi05 state prompt: " + std::to_string(tasks.size()) + " tasks for a batch of " +
                          std::to_string(state.size(0)) + " states");
  auto bins = state_bins(state).contiguous();
  auto rows = bins.accessor<int64_t, 2>();
  std::vector<std::string> prompts;
  prompts.reserve(tasks.size());
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    std::string joined;
    for (int64_t j = 0; j < bins.size(1); ++j)
      joined += (j ? " " : "") + std::to_string(rows[static_cast<int64_t>(i)][j]);
    prompts.push_back("Task: " + clean_task_text(tasks[i]) + ", State: " + joined + ";\nAction: ");
  }
  return prompts;
}

}  // namespace lrhost::policy
