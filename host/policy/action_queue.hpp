// LeRobot's action queue for chunking policies (select_action): the first n_action_steps actions of a
// predicted chunk are handed out one per call, and a new chunk is predicted when the queue runs dry.
#pragma once
#include <torch/torch.h>

#include <deque>
#include <functional>

namespace lrhost::policy {

class ActionQueue {
 public:
  // The next action (B, action_dim); `predict_chunk` gives (B, K, action_dim) when the queue is
  // empty, of which the first `steps` are queued.
  torch::Tensor next(int64_t steps, const std::function<torch::Tensor()>& predict_chunk) {
    if (queue_.empty()) {
      auto actions = predict_chunk().slice(1, 0, steps);
      for (int64_t t = 0; t < actions.size(1); ++t) queue_.push_back(actions.select(1, t));
    }
    auto action = queue_.front();
    queue_.pop_front();
    return action;
  }
  void clear() { queue_.clear(); }

 private:
  std::deque<torch::Tensor> queue_;
};

}  // namespace lrhost::policy
