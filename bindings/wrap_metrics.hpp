// Lua binding of metric sinks, the training meter and the evaluation progress (see wrap_metrics.cpp); the accelerator's
// binding checks and pushes them through these.
#pragma once

#include <memory>

#include "bindings/runtime.hpp"
#include "host/metrics/eval_progress.hpp"
#include "host/metrics/metrics_sink.hpp"
#include "host/metrics/training_meter.hpp"

namespace lrhost::bindings {

template <>
struct LxTraits<metrics::MetricsSink> {
  static constexpr LxType type{"MetricsSink", "lrhost.MetricsSink"};
};
template <>
struct LxTraits<metrics::TrainingMeter> {
  static constexpr LxType type{"TrainingMeter", "lrhost.TrainingMeter"};
};
template <>
struct LxTraits<metrics::EvalProgress> {
  static constexpr LxType type{"EvalProgress", "lrhost.EvalProgress"};
};

}  // namespace lrhost::bindings
