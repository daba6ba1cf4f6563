// Dropout with ATen's CPU mask stream drawn in bulk; see dropout.hpp.
#include "host/nn/dropout.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/Functions.h>

#include <mutex>

#include "host/nn/bernoulli_mask.hpp"
#include "host/util/env_switch.hpp"

namespace lrhost::nn {

namespace {

util::EnvSwitch& bulk_switch() {
  static util::EnvSwitch on{"LRHOST_BULK_DROPOUT"};
  return on;
}

// ATen's scalar bernoulli_ takes MKL's generator (another stream) on Intel CPUs when built with MKL
// (aten/src/ATen/native/cpu/DistributionKernels.cpp); only elsewhere does it draw from MT19937.
bool aten_uses_mkl_bernoulli() {
  static const bool mkl_path = [] {
    __builtin_cpu_init();
    return at::hasMKL() && __builtin_cpu_is("intel");
  }();
  return mkl_path;
}

}  // namespace

bool draws_dropout_mask_in_bulk(const at::Tensor& input, double p, bool train) {
  return bulk_switch().enabled() && train && p > 0.0 && p < 1.0 && input.defined() && input.device().is_cpu() &&
         input.scalar_type() == at::kFloat && input.is_contiguous() && input.numel() > 0 && !aten_uses_mkl_bernoulli();
}

at::Tensor dropout(const at::Tensor& input, double p, bool train) {
  if (!draws_dropout_mask_in_bulk(input, p, train)) return at::dropout(input, p, train);
  at::Tensor mask = at::empty_like(input, at::MemoryFormat::Contiguous);
  {
    auto generator = at::detail::getDefaultCPUGenerator();
    auto* impl = generator.get<at::CPUGeneratorImpl>();
    std::lock_guard<std::mutex> lock(generator.mutex());  // what ATen's kernels hold while drawing
    at::mt19937 engine = impl->engine();
    at::mt19937_data_pod data = engine.data();
    fill_dropout_mask(data, mask.data_ptr<float>(), mask.numel(), 1.0 - p);
    engine.set_data(data);
    impl->set_engine(engine);
  }
  return input * mask;  // at::dropout's multiplication: autograd saves the scaled mask, as there
}

bool set_bulk_dropout(bool enabled) {
  return bulk_switch().set(enabled);
}

}  // namespace lrhost::nn
