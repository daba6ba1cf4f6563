// Building a model whose weights come from a file without ever holding it whole in memory (LeRobot
// #4009: N ranks each building a 4 B-parameter model before FSDP shards it). While a DeferredInit is
// alive on this thread, module constructors that take part call release_parameters() on each block
// right after building it (a decoder layer, an embedding table): each parameter becomes one zero
// element expanded to its shape (shape, dtype, device and requires_grad kept, its storage freed), so
// the peak during construction is one block. Dtype changes during construction go through convert_to,
// which keeps released parameters released. The loader then points every released parameter at the
// checkpoint's memory-mapped tensor (ckpt/pretrained_dir.hpp, file-backed loading): FSDP copies out
// only this rank's rows, DDP writes through copy-on-write pages. Outside a DeferredInit,
// release_parameters does nothing and convert_to is Module::to.
#pragma once
#include <torch/torch.h>

namespace lrhost::nn {

class DeferredInit {
 public:
  DeferredInit();
  ~DeferredInit();
  DeferredInit(const DeferredInit&) = delete;
  DeferredInit& operator=(const DeferredInit&) = delete;

 private:
  bool previous_;
};

bool deferring_init();

// Releases every parameter of `module` (recursively) when deferring; otherwise nothing.
void release_parameters(torch::nn::Module& module);
// Whether `tensor` is a released parameter (its storage holds fewer elements than its shape).
bool is_released(const torch::Tensor& tensor);
// module.to(dtype), keeping released parameters released (no whole-size copy).
void convert_to(torch::nn::Module& module, c10::ScalarType dtype);

}  // namespace lrhost::nn
