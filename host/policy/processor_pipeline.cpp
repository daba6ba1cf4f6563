// Processor pipeline shapes: LeRobot's default and language pipelines, lookups; see processor_pipeline.hpp.
#include "host/policy/processor_pipeline.hpp"

#include <algorithm>

namespace lrhost::policy {

ProcessorPipeline ProcessorPipeline::lerobot_default() {
  return {
      {{"rename_observations_processor", ProcessorStepKind::rename},
       {"to_batch_processor", ProcessorStepKind::to_batch},
       {"device_processor", ProcessorStepKind::device},
       {"normalizer_processor", ProcessorStepKind::normalizer}},
      {{"unnormalizer_processor", ProcessorStepKind::unnormalizer}, {"device_processor", ProcessorStepKind::device}}};
}

ProcessorPipeline ProcessorPipeline::with_language(const std::string& new_line_step) {
  auto pipeline = lerobot_default();
  pipeline.pre.insert(pipeline.pre.begin() + 2, {{new_line_step, ProcessorStepKind::task_new_line},
                                                 {"tokenizer_processor", ProcessorStepKind::tokenizer}});
  return pipeline;
}

std::optional<std::size_t> ProcessorPipeline::index_of(const std::vector<ProcessorStep>& steps,
                                                       ProcessorStepKind kind) {
  auto found = std::find_if(steps.begin(), steps.end(), [&](const ProcessorStep& s) { return s.kind == kind; });
  if (found == steps.end()) return std::nullopt;
  return static_cast<std::size_t>(found - steps.begin());
}

std::optional<std::size_t> ProcessorPipeline::stats_step(const std::vector<ProcessorStep>& steps) {
  auto found = std::find_if(steps.begin(), steps.end(), [](const ProcessorStep& s) {
    return s.kind == ProcessorStepKind::normalizer || s.kind == ProcessorStepKind::unnormalizer ||
           s.kind == ProcessorStepKind::groot_pack || s.kind == ProcessorStepKind::groot_unpack;
  });
  if (found == steps.end()) return std::nullopt;
  return static_cast<std::size_t>(found - steps.begin());
}

std::string ProcessorPipeline::names(const std::vector<ProcessorStep>& steps) {
  std::string out;
  for (const auto& step : steps) out += (out.empty() ? "" : ", ") + step.registry_name;
  return out;
}

bool ProcessorPipeline::matches(const std::vector<ProcessorStep>& steps,
                                const std::vector<std::string>& registry_names) {
  return std::equal(steps.begin(), steps.end(), registry_names.begin(), registry_names.end(),
                    [](const ProcessorStep& step, const std::string& name) { return step.registry_name == name; });
}

bool ProcessorPipeline::operator==(const ProcessorPipeline& other) const {
  auto same = [](const std::vector<ProcessorStep>& a, const std::vector<ProcessorStep>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const ProcessorStep& x, const ProcessorStep& y) {
      return x.registry_name == y.registry_name && x.kind == y.kind;
    });
  };
  return same(pre, other.pre) && same(post, other.post);
}

std::string step_state_file(const std::string& pipeline_name, std::size_t index, const std::string& registry_name) {
  return pipeline_name + "_step_" + std::to_string(index) + "_" + registry_name + ".safetensors";
}

}  // namespace lrhost::policy
