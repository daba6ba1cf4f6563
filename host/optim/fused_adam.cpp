// The fused Adam/AdamW step: per parameter, LibTorch's state handling and scalar coefficients, then
// for fp32 CPU parameters one parallel loop over the elements that performs LibTorch's operations in
// LibTorch's order, for CUDA and reduced-precision CPU parameters one multi-tensor launch of ATen's
// fused kernel per parameter group.
#include "host/optim/fused_adam.hpp"

#include <ATen/Parallel.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <cmath>
#include <map>
#include <vector>

namespace lrhost::optim {
namespace {

struct Coefficients {
  float beta1, one_minus_beta1, beta2, one_minus_beta2;
  float decay;  // Adam: weight_decay added to the gradient; AdamW: 1 - lr * weight_decay
  float sqrt_bias_correction2, eps, neg_step_size;
};

bool can_fuse(const torch::Tensor& p) {
  return p.device().is_cpu() && p.scalar_type() == torch::kFloat32 && p.is_contiguous() && !p.is_sparse() &&
         p.grad().scalar_type() == torch::kFloat32 && p.grad().is_contiguous() && !p.grad().is_sparse();
}

// ATen's fused kernel (what torch.optim.AdamW(fused=True) runs): dense, the gradient in the
// parameter's dtype and layout. On CUDA any floating dtype; on CPU the reduced-precision ones (bf16,
// fp16: SmolVLA's expert), whose update it computes in fp32 and rounds once, where LibTorch's
// per-operation step rounds every intermediate to the parameter's dtype.
bool can_fuse_with_aten(const torch::Tensor& p) {
  const bool dtype_ok = p.is_cuda()
                            ? p.is_floating_point()
                            : p.is_cpu() && (p.scalar_type() == torch::kBFloat16 || p.scalar_type() == torch::kHalf);
  return dtype_ok && !p.is_sparse() && p.is_contiguous() && p.grad().scalar_type() == p.scalar_type() &&
         p.grad().device() == p.device() && !p.grad().is_sparse() && p.grad().is_contiguous();
}

// Elements [begin, end) one at a time: the reference arithmetic, and the tail of the SIMD loop.
template <bool Decoupled>
void update_scalar(float* p, const float* g, float* m, float* v, int64_t begin, int64_t end, const Coefficients& c,
                   bool weight_decay) {
  for (int64_t i = begin; i < end; ++i) {
    float grad = g[i];
    float param = p[i];
    if (weight_decay) {
      if constexpr (Decoupled)
        param = param * c.decay;  // p.mul_(1 - lr * wd)
      else
        grad = grad + c.decay * param;  // grad.add(p, wd)
    }
    float mean = m[i] * c.beta1 + c.one_minus_beta1 * grad;          // exp_avg.mul_(b1).add_(g, 1 - b1)
    float var = v[i] * c.beta2 + c.one_minus_beta2 * grad * grad;    // exp_avg_sq.mul_(b2).addcmul_(g, g, 1 - b2)
    float denom = std::sqrt(var) / c.sqrt_bias_correction2 + c.eps;  // (sqrt(v) / sqrt(bc2)).add_(eps)
    p[i] = param + c.neg_step_size * (mean / denom);                 // p.addcdiv_(m, denom, -step_size)
    m[i] = mean;
    v[i] = var;
  }
}

// The same operations four elements at a time with SSE2 (every x86-64 CPU has it): each one is an
// IEEE single-precision operation like its scalar twin, in the same order and without fused
// multiply-adds, so results are bit for bit the scalar loop's. The compiler does not vectorize the
// scalar loop itself (std::sqrt may set errno), which left the step compute-bound.
template <bool Decoupled>
void update(float* p, const float* g, float* m, float* v, int64_t n, const Coefficients& c, bool weight_decay) {
  at::parallel_for(0, n, 1 << 15, [&](int64_t begin, int64_t end) {
    int64_t i = begin;
#if defined(__SSE2__)
    const __m128 beta1 = _mm_set1_ps(c.beta1), one_minus_beta1 = _mm_set1_ps(c.one_minus_beta1);
    const __m128 beta2 = _mm_set1_ps(c.beta2), one_minus_beta2 = _mm_set1_ps(c.one_minus_beta2);
    const __m128 decay = _mm_set1_ps(c.decay), sqrt_bias_correction2 = _mm_set1_ps(c.sqrt_bias_correction2);
    const __m128 eps = _mm_set1_ps(c.eps), neg_step_size = _mm_set1_ps(c.neg_step_size);
    for (; i + 4 <= end; i += 4) {
      __m128 grad = _mm_loadu_ps(g + i);
      __m128 param = _mm_loadu_ps(p + i);
      if (weight_decay) {
        if constexpr (Decoupled)
          param = _mm_mul_ps(param, decay);
        else
          grad = _mm_add_ps(grad, _mm_mul_ps(decay, param));
      }
      __m128 mean = _mm_add_ps(_mm_mul_ps(_mm_loadu_ps(m + i), beta1), _mm_mul_ps(one_minus_beta1, grad));
      __m128 var =
          _mm_add_ps(_mm_mul_ps(_mm_loadu_ps(v + i), beta2), _mm_mul_ps(_mm_mul_ps(one_minus_beta2, grad), grad));
      __m128 denom = _mm_add_ps(_mm_div_ps(_mm_sqrt_ps(var), sqrt_bias_correction2), eps);
      _mm_storeu_ps(p + i, _mm_add_ps(param, _mm_mul_ps(neg_step_size, _mm_div_ps(mean, denom))));
      _mm_storeu_ps(m + i, mean);
      _mm_storeu_ps(v + i, var);
    }
#endif
    update_scalar<Decoupled>(p, g, m, v, i, end, c, weight_decay);
  });
}

// One parameter group's parameters for one device, updated by one call of ATen's fused kernel. The
// kernel reads each parameter's step count from a tensor; LibTorch's state keeps it as an integer
// (what checkpoints save), so parameters of the group that share a step share one scalar.
struct AtenBatch {
  std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs, steps;
  std::map<int64_t, torch::Tensor> step_tensors;

  void add(const torch::Tensor& p, const torch::Tensor& grad, const torch::Tensor& exp_avg,
           const torch::Tensor& exp_avg_sq, int64_t step) {
    auto& step_tensor = step_tensors[step];
    if (!step_tensor.defined())
      step_tensor =
          torch::full({}, static_cast<double>(step), torch::TensorOptions(torch::kFloat32).device(p.device()));
    params.push_back(p);
    grads.push_back(grad);
    exp_avgs.push_back(exp_avg);
    exp_avg_sqs.push_back(exp_avg_sq);
    steps.push_back(step_tensor);
  }

  void step(bool decoupled, double lr, double beta1, double beta2, double weight_decay, double eps) {
    if (params.empty()) return;
    if (decoupled)
      at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, {}, steps, lr, beta1, beta2, weight_decay, eps,
                        /*amsgrad=*/false, /*maximize=*/false);
    else
      at::_fused_adam_(params, grads, exp_avgs, exp_avg_sqs, {}, steps, lr, beta1, beta2, weight_decay, eps,
                       /*amsgrad=*/false, /*maximize=*/false);
  }
};

}  // namespace

bool fused_adam_step(torch::optim::Optimizer& optimizer, bool decoupled_weight_decay) {
  // Every parameter on the CPU, or every one on CUDA; each handled by one of the two paths.
  bool cpu = true, cuda = true;
  for (auto& group : optimizer.param_groups()) {
    const auto& options = static_cast<const torch::optim::AdamOptions&>(group.options());
    if (options.amsgrad()) return false;
    for (const auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      cpu = cpu && (can_fuse(p) || (p.is_cpu() && can_fuse_with_aten(p)));
      cuda = cuda && p.is_cuda() && can_fuse_with_aten(p);
    }
  }
  if (!cpu && !cuda) return false;
  torch::NoGradGuard no_grad;
  for (auto& group : optimizer.param_groups()) {
    // AdamOptions and AdamWOptions have the same accessors; read them through the right type.
    double lr = 0, beta1 = 0, beta2 = 0, eps = 0, weight_decay = 0;
    if (decoupled_weight_decay) {
      const auto& o = static_cast<const torch::optim::AdamWOptions&>(group.options());
      lr = o.lr(), beta1 = std::get<0>(o.betas()), beta2 = std::get<1>(o.betas()), eps = o.eps(),
      weight_decay = o.weight_decay();
    } else {
      const auto& o = static_cast<const torch::optim::AdamOptions&>(group.options());
      lr = o.lr(), beta1 = std::get<0>(o.betas()), beta2 = std::get<1>(o.betas()), eps = o.eps(),
      weight_decay = o.weight_decay();
    }
    AtenBatch aten_batch;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto key = p.unsafeGetTensorImpl();
      auto& states = optimizer.state();
      if (!states.count(key)) {
        auto state = std::make_unique<torch::optim::AdamParamState>();
        state->step(0);
        state->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        state->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        states[key] = std::move(state);
      }
      auto& state = static_cast<torch::optim::AdamParamState&>(*states[key]);
      state.step(state.step() + 1);
      const double bias_correction1 = 1 - std::pow(beta1, static_cast<double>(state.step()));
      const double bias_correction2 = 1 - std::pow(beta2, static_cast<double>(state.step()));
      Coefficients c{static_cast<float>(beta1),
                     static_cast<float>(1 - beta1),
                     static_cast<float>(beta2),
                     static_cast<float>(1 - beta2),
                     static_cast<float>(decoupled_weight_decay ? 1 - lr * weight_decay : weight_decay),
                     static_cast<float>(std::sqrt(bias_correction2)),
                     static_cast<float>(eps),
                     static_cast<float>(-lr / bias_correction1)};
      auto grad = p.grad();
      auto& exp_avg = state.exp_avg();
      auto& exp_avg_sq = state.exp_avg_sq();
      if (!can_fuse(p)) {
        aten_batch.add(p, grad, exp_avg, exp_avg_sq, state.step());
        continue;
      }
      if (!exp_avg.is_contiguous() || !exp_avg_sq.is_contiguous()) {
        exp_avg = exp_avg.contiguous();
        exp_avg_sq = exp_avg_sq.contiguous();
      }
      float* data = p.data_ptr<float>();
      if (decoupled_weight_decay)
        update<true>(data, grad.data_ptr<float>(), exp_avg.data_ptr<float>(), exp_avg_sq.data_ptr<float>(), p.numel(),
                     c, weight_decay != 0);
      else
        update<false>(data, grad.data_ptr<float>(), exp_avg.data_ptr<float>(), exp_avg_sq.data_ptr<float>(), p.numel(),
                      c, weight_decay != 0);
    }
    aten_batch.step(decoupled_weight_decay, lr, beta1, beta2, weight_decay, eps);
  }
  return true;
}

}  // namespace lrhost::optim
