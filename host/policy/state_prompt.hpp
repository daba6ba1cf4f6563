// pi05's prompt (LeRobot 0.6.1 processor_pi05.py, Pi05PrepareStateTokenizerProcessorStep): the task,
// cleaned, followed by the normalized observation.state discretized into 256 bins, as the text the
// tokenizer reads: "Task: {clean task}, State: {bins joined by ' '};\nAction: ".
#pragma once
#include <torch/torch.h>

#include <string>
#include <vector>

namespace lrhost::policy {

// numpy.digitize(x, linspace(-1, 1, 257)[:-1]) - 1 for each entry of `state` (any float dtype, any
// device), as int64 on the CPU: -1 below -1, 255 from 1 - 1/128 up, 255 for NaN.
torch::Tensor state_bins(const torch::Tensor& state);
// Python's task.strip().replace("_", " ").replace("\n", " ").
std::string clean_task_text(const std::string& task);
// One prompt per row of `state` (B, D): tasks.size() must be B.
std::vector<std::string> state_prompts(const std::vector<std::string>& tasks, const torch::Tensor& state);

}  // namespace lrhost::policy
