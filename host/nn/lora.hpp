// LoRA adapters on Linear layers with PEFT 0.18's arithmetic (peft/tuners/lora/layer.py), so that a
// seeded adapter, its forward, its gradients and its files equal LeRobot + PEFT's:
//  - an adapter is two children of the adapted Linear, "lora_A" (a Linear in -> r without bias) and
//    "lora_B" (LoraUp: out x r, with the scaling and dropout), so parameter names are PEFT's saved
//    keys (`<layer>.lora_A.weight`) and the adapter lives wherever its layer lives (an FSDP unit);
//  - scaling = alpha / r, or alpha / sqrt(r) with use_rslora;
//  - y = base(x) + B(A(dropout(x'))) * scaling, where x' is x cast to the adapter's dtype, and the
//    sum cast back to the base output's dtype;
//  - initialisation draws as PEFT does from the default generator: A and B first by nn.Linear's
//    default init (kaiming-uniform, a = sqrt(5)), then `init` resets them: kaiming_uniform (PEFT's
//    init_lora_weights=True: A kaiming-uniform again, B = 0), gaussian (A ~ N(0, 1/r), B = 0) or
//    none (False: both stay random); the adapter is then rounded to the weight's dtype and upcast
//    to fp32 if that is fp16/bf16 (PEFT moves adapters to the base's dtype, then get_peft_model's
//    autocast_adapter_dtype upcasts them).
// apply_linear (linear.hpp) adds an attached adapter's output, so every block that applies its
// Linears through it is adaptable.
#pragma once
#include <torch/torch.h>

#include <cstdint>

namespace lrhost::nn {

enum class LoraInit { kaiming_uniform, gaussian, none };

struct LoraSettings {
  int64_t r = 8;
  double alpha = 8;
  double dropout = 0;
  bool use_rslora = false;
  LoraInit init = LoraInit::kaiming_uniform;

  double scaling() const;
};

// The up projection of an adapter (PEFT's lora_B) and how the adapter is applied.
class LoraUpImpl : public torch::nn::Module {
 public:
  LoraUpImpl(int64_t r, int64_t out_features, double scaling, double dropout);
  torch::Tensor weight;  // out x r
  double scaling;
  double dropout;
};
TORCH_MODULE(LoraUp);

// Attaches an adapter to `layer` (ConfigError when it has one, or r < 1), on the weight's device.
void add_lora(torch::nn::LinearImpl& layer, const LoraSettings& settings);

// The adapter's parts, or nullptrs when `layer` has none.
struct LoraParts {
  torch::nn::LinearImpl* down = nullptr;  // lora_A
  LoraUpImpl* up = nullptr;               // lora_B
  explicit operator bool() const { return up != nullptr; }
};
LoraParts lora_parts(const torch::nn::LinearImpl& layer);

// base_output + B(A(dropout(input))) * scaling in PEFT's dtypes (what apply_linear returns for an
// adapted layer).
torch::Tensor add_lora_output(const LoraParts& adapter, const torch::Tensor& input, const torch::Tensor& base_output);

// W + (B @ A) * scaling, computed in fp32 and returned in W's dtype (PEFT's get_delta_weight and
// merge): the weight of the plain Linear the adapted one equals.
torch::Tensor merged_lora_weight(const torch::nn::LinearImpl& layer);

// Folds the adapter into the layer (weight = merged_lora_weight) and removes it: the layer is a plain
// Linear again (PEFT's merge_and_unload of one layer). ConfigError when it has none.
void merge_lora(torch::nn::LinearImpl& layer);

}  // namespace lrhost::nn
