-- GPU only: bf16 autocast on CUDA through a prepared policy; one training step runs and the
-- prediction is bfloat16 while parameters stay float32 on the GPU.
local lr = require "lrhost"
local acc = lr.accelerator { accelerator = { mixed_precision = "bf16" } }
assert(acc.device:match("^cuda"), "expected a CUDA device, got " .. acc.device)
local policy = lr.policy.new { type = "mlp", input_dim = 4, output_dim = 2, hidden_dims = { 16 } }
local opt = lr.optim.adamw(policy, { lr = 1e-3 })
acc:prepare(policy, opt)
local batch = acc:to_device { ["observation.state"] = lr.randn(8, 4), action = lr.randn(8, 2) }
local loss, parts = policy:forward(batch)
assert(parts.prediction.dtype == "bfloat16", "autocast dtype " .. parts.prediction.dtype)
assert(loss.dtype == "float32" and policy:parameters()[1].dtype == "float32", "fp32 loss and master weights")
assert(policy:parameters()[1].device == acc.device, "parameters on the GPU")
acc:backward(loss)
assert(opt:step(), "optimizer stepped")
print("bf16 on cuda ok")
