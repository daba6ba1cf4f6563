-- The accelerator in a single process: properties, prepare, gradient accumulation gating,
-- fp16 loss scaling (a non-finite step is skipped and the scale halves), bf16 autocast,
-- clip_grad_norm, metric reduction, on_main, and argument errors.
local lr = require "lrhost"
local t = require "testlib"

local function make_policy()
  lr.manual_seed(3)
  return lr.policy.new { type = "mlp", input_dim = 4, output_dim = 2, hidden_dims = { 8 } }
end
local function batch(n)
  return { ["observation.state"] = lr.randn(n, 4), action = lr.randn(n, 2) }
end

-- properties and batch semantics
do
  local acc = lr.accelerator { batch_size = 8, accelerator = { gradient_accumulation_steps = 3 } }
  t.eq(acc.rank, 0, "rank")
  t.eq(acc.world_size, 1, "world_size")
  t.raises(function() return acc.num_processes end, "Accelerator has no method or property 'num_processes'", "one name per property: world_size")
  t.eq(acc.is_main_process, true, "is_main_process")
  t.eq(acc.device, "cpu", "device")
  t.eq(acc.effective_batch, 24, "effective batch = 8 x 1 x 3")
  t.eq(acc.gradient_accumulation_steps, 3, "accumulation steps")
  t.eq(acc:ddp_stats(), nil, "no DDP in one process")

  -- accumulation: the optimizer steps (and zero_grad clears) only on every 3rd micro-step, and the
  -- result equals one step on the concatenated batch.
  local policy = make_policy()
  local opt = lr.optim.sgd(policy, { lr = 0.1 })
  acc:prepare(policy, opt)
  lr.manual_seed(9)
  local micro = { batch(8), batch(8), batch(8) }
  for i = 1, 3 do
    acc:backward((policy:forward(micro[i])))
    t.eq(acc.sync_gradients, i == 3, "sync_gradients at micro-step " .. i)
    if i < 3 then t.eq(acc:clip_grad_norm(1e9), nil, "no clipping mid-cycle") end
    t.eq(opt:step(), i == 3, "optimizer steps only at the boundary (" .. i .. ")")
    opt:zero_grad()
  end
  local reference = make_policy()
  local ref_opt = lr.optim.sgd(reference, { lr = 0.1 })
  local whole = { ["observation.state"] = lr.cat { micro[1]["observation.state"], micro[2]["observation.state"],
                                                   micro[3]["observation.state"] },
                  action = lr.cat { micro[1].action, micro[2].action, micro[3].action } }
  reference:forward(whole):backward()
  ref_opt:step()
  local got, want = policy:named_parameters(), reference:named_parameters()
  for name, p in pairs(want) do
    t.truthy(got[name]:allclose(p, 1e-5, 1e-6), "accumulated step equals the big-batch step: " .. name)
  end
  t.raises(function() acc:prepare(policy, opt) end, "prepare was already called")
end

-- fp16: a step whose gradients overflow is skipped and the loss scale halves.
do
  local acc = lr.accelerator { accelerator = { mixed_precision = "fp16" } }
  local policy = make_policy()
  local opt = lr.optim.adamw(policy, { lr = 1e-2 })
  local sched = lr.optim.scheduler(opt, { type = "linear_with_warmup", warmup_steps = 1, total_steps = 10 })
  acc:prepare(policy, opt)
  t.eq(acc:loss_scale(), 65536, "initial loss scale")
  local before = policy:named_parameters()["layers.0.weight"]:clone()
  local loss = policy:forward(batch(4)) * 1e38   -- x 65536 overflows to inf
  acc:backward(loss)
  t.eq(opt:step(), false, "step with inf gradients is skipped")
  sched:step()
  t.eq(sched:last_step(), 0, "the schedule does not advance on a skipped step")
  opt:zero_grad()
  t.eq(acc:skipped_steps(), 1, "skipped steps counted")
  t.eq(acc:loss_scale(), 32768, "scale halved")
  t.truthy(policy:named_parameters()["layers.0.weight"]:equal(before), "parameters untouched")
  acc:backward(policy:forward(batch(4)))
  t.eq(opt:step(), true, "a finite step is taken")
  sched:step()
  t.eq(sched:last_step(), 1, "and the schedule advances")
  t.eq(acc.mixed_precision, "fp16", "mixed_precision property")
end

-- bf16 autocast: predictions in bfloat16, the loss returned in float32, parameters stay float32.
do
  local acc = lr.accelerator { accelerator = { mixed_precision = "bf16" } }
  local policy = make_policy()
  local opt = lr.optim.sgd(policy, { lr = 0.1 })
  acc:prepare(policy, opt)
  local loss, parts = policy:forward(batch(4))
  t.eq(parts.prediction.dtype, "bfloat16", "autocast prediction")
  t.eq(loss.dtype, "float32", "fp32 loss")
  t.eq(policy:parameters()[1].dtype, "float32", "fp32 master weights")
  local a = lr.randn(2, 2)
  t.eq(acc:autocast(function(x) return x:matmul(x).dtype end, a), "bfloat16", "acc:autocast(fn, ...)")
  t.eq(a:matmul(a).dtype, "float32", "autocast ends with the block")
end

-- collectives and helpers in one process are identities; on_main runs; collectives inside raise
do
  local acc = lr.accelerator {}
  t.eq(acc:all_reduce(3), 3, "all_reduce number")
  t.eq(acc:gather(5), { 5 }, "gather number")
  t.eq(acc:reduce_metrics { loss = 2, step_time = 1 }, { loss = 2, step_time = 1 }, "reduce_metrics")
  t.eq(acc:on_main(function(x) return x + 1 end, 1), 2, "on_main returns the block's values")
  t.raises(function() acc:on_main(function() acc:wait_for_everyone() end) end,
    "collective 'barrier' called inside a main-process-only block")
  t.eq(acc:all_reduce(1), 1, "collectives work again after the block")
  local moved = acc:to_device { x = lr.ones(2), task = "text" }
  t.eq(moved.x.device, "cpu", "to_device moves tensors")
  t.eq(moved.task, "text", "to_device keeps other values")
end

-- errors
t.raises(function() lr.accelerator { accelerator = { mixed_precision = "fp8" } } end,
  "'mixed_precision' must be one of 'no', 'bf16', 'fp16'")
t.raises(function() lr.accelerator { accelerator = { gradient_accumulation_steps = 0 } } end,
  "'gradient_accumulation_steps' must be a positive integer")
t.raises(function() lr.accelerator { accelerator = { grad_accum = 2 } } end, "unknown option 'grad_accum'")
t.raises(function() lr.accelerator { parallelism = { dp_shard = 2 } } end,
  "dp_shard (2) x dp_replicate (1) must equal the number of ranks (1)")
t.raises(function() lr.accelerator { parallelism = { dp_shard = 0 } } end, "'parallelism.dp_shard' must be -1")
t.raises(function() lr.accelerator { parallelism = { dp_shard = -1, dp_replicate = -1 } } end, "cannot both be -1")
t.raises(function() lr.accelerator { accelerator = { fsdp = { wrap_modules = 3 } }, parallelism = { dp_shard = -1 } } end,
  "'accelerator.fsdp.wrap_modules' must be a list of module type names")
t.raises(function() lr.accelerator { accelerator = { fsdp = { reshard = true } } } end, "unknown option 'reshard'")
-- One rank with dp_shard = -1 is FSDP over a group of one.
t.eq(lr.accelerator({ parallelism = { dp_shard = -1 } }).strategy, "fsdp zero-3 (dp_shard 1 x dp_replicate 1)",
     "dp_shard = -1 on one rank")
-- is_sharded: FSDP by the config (a group of one included), known before prepare; never the text.
t.eq(lr.accelerator({ parallelism = { dp_shard = -1 } }).is_sharded, true, "dp_shard = -1 shards")
t.eq(lr.accelerator({}).is_sharded, false, "dp_shard = 1 does not shard")
t.raises(function() return lr.accelerator({}).unwrap end, "no method or property 'unwrap'",
         "no unwrap: prepare returns the policy itself")
t.raises(function() lr.accelerator { batch_size = 0 } end, "'batch_size' must be a positive integer")
local acc = lr.accelerator {}
t.raises(function() acc:backward(lr.ones(2)) end, "the loss must be a tensor with one element")
t.raises(function() acc:backward(lr.ones(1)) end, "the loss does not require grad")
t.raises(function() acc:clip_grad_norm(1) end, "call accelerator:prepare")
t.raises(function() acc:all_reduce("x") end, "expected Tensor or number, got string")
t.raises(function() acc:all_reduce(1, "avg") end, "expected one of 'sum', 'mean', 'max', 'min'")
t.raises(function() acc:prepare(lr.ones(1)) end, "bad argument #1 to 'Accelerator:prepare' (expected Policy, got Tensor)")
t.raises(function() return acc.nope end, "Accelerator has no method or property 'nope'")
t.done()
