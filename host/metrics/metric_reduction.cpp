// Name-based reduction rules for logged metrics; see metric_reduction.hpp.
#include "host/metrics/metric_reduction.hpp"

namespace lrhost::metrics {
namespace {
bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}
}  // namespace

Reduction reduction_for(std::string_view name) {
  if (ends_with(name, "_per_s") || ends_with(name, "/s") || ends_with(name, "_count")) return Reduction::sum;
  if (ends_with(name, "_s") || ends_with(name, "_time") || ends_with(name, "_gib") || ends_with(name, "_bytes"))
    return Reduction::max;
  return Reduction::mean;
}

const char* reduction_name(Reduction reduction) {
  switch (reduction) {
    case Reduction::sum:
      return "sum";
    case Reduction::max:
      return "max";
    case Reduction::mean:
      break;
  }
  return "mean";
}

}  // namespace lrhost::metrics
