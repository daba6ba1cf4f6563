-- The policy API from Lua: building an mlp, forward/backward, parameters, modes, config, errors.
local lr = require "lrhost"
local t = require "testlib"

lr.manual_seed(1)
local policy = lr.policy.new { type = "mlp", input_dim = 3, output_dim = 2, hidden_dims = { 4 },
                               input_key = "x", target_key = "y" }
t.eq(policy:type_name(), "mlp", "type")
t.eq(policy:type(), "Policy", "native type name")
t.eq(policy:num_parameters(), 3 * 4 + 4 + 4 * 2 + 2, "parameter count")
t.eq(#policy:parameters(), 4, "parameter tensors")
local named = policy:named_parameters()
t.truthy(named["layers.0.weight"] ~= nil, "named parameter layers.0.weight")
t.eq(named["layers.0.weight"].shape, { 4, 3 }, "weight shape")

local cfg = policy:config()
t.eq(cfg.hidden_dims, { 4 }, "config hidden_dims")
t.eq(cfg.activation, "relu", "config default activation")

-- forward returns the loss and named parts; the loss is the MSE of the prediction.
local batch = { x = lr.randn(5, 3), y = lr.randn(5, 2), task = "ignored text" }
local loss, parts = policy:forward(batch)
t.eq(loss.shape, {}, "scalar loss")
local mse = ((parts.prediction - batch.y) ^ 2):mean()
t.near(loss:item(), mse:item(), 1e-6, "mse loss")
t.truthy(parts.l1_loss ~= nil, "l1 part")
loss:backward()
t.truthy(named["layers.0.weight"].grad ~= nil, "gradients after backward")

-- train/eval modes
t.eq(policy:is_training(), true, "training by default")
policy:eval()
t.eq(policy:is_training(), false, "eval mode")
policy:train()

-- param_groups: one default group with every parameter
local groups = policy:param_groups()
t.eq(#groups, 1, "one group")
t.eq(#groups[1].params, 4, "all parameters in it")

-- features give the dims
local from_features = lr.policy.new({ type = "mlp", hidden_dims = {} },
                                    { inputs = { ["observation.state"] = { 6 } }, outputs = { action = { 2 } } })
t.eq(from_features:config().input_dim, 6, "input_dim from features")
t.eq(lr.policy.types(), { "act", "diffusion", "groot", "mlp", "pi0", "pi05", "smolvla" }, "registered types")
-- pi0/pi05 options lrhost does not implement are refused before anything is built.
t.raises(function() lr.policy.new(lr.policy.defaults("pi05", { use_relative_actions = true })) end,
         "'use_relative_actions' = true")

-- Training capabilities the shared loop uses: an mlp keeps nothing and has no figures of its own.
policy:prepare_training { cache_dir = os.tmpname() .. ".never", num_frames = 10, dataset_id = "d", augmentation = true }
t.eq(next(policy:training_metrics()), nil, "no training metrics")
t.raises(function() policy:prepare_training "dir" end, "bad argument #1 to 'Policy:prepare_training'")
t.raises(function() policy:prepare_training { cach_dir = "x" } end, "cach_dir")

-- errors
t.raises(function() lr.policy.new { type = "nope" } end, "unknown policy type 'nope'")
t.raises(function() lr.policy.new "mlp" end, "bad argument #1 to 'lr.policy.new' (expected policy config table")
t.raises(function() lr.policy.new { type = "mlp", input_dim = 3, output_dim = 1, dropuot = 0.1 } end,
  "did you mean 'dropout'")
t.raises(function() policy:forward({ x = lr.randn(5, 3) }) end, "the batch has no 'y' (it has 'x')")
t.raises(function() policy:forward({ x = lr.randn(5, 3), y = 3 }) end, "batch['y'] is a number, expected Tensor")
t.raises(function() policy:forward({ x = lr.randn(5, 4), y = lr.randn(5, 2) }) end, "expects input_dim = 3")
t.raises(function() policy:to("tpu") end, "unknown dtype 'tpu'")
policy:release()
t.raises(function() policy:forward(batch) end, "Policy was released")

t.done()
