-- lrhost's half of the per-dataset stats interop (run_mixture_merge_interop.sh): a policy built on a
-- mixture with stats = "per_dataset" saves its processors to OUT/policy, and the batch a loader gives
-- (its dataset_index included) with lrhost's normalization of it to OUT/batch.safetensors
-- ("raw.<key>" before, "normalized.<key>" after). per_dataset_stats_check.py then normalizes each
-- sample with LeRobot's pipeline of that sample's dataset (policy_preprocessor_<name>.json).
--
--   lrhost tests/interop/per_dataset_stats_write.lua roots=A,B out=DIR
local lr = require "lrhost"
local cfg = lr.config { roots = "", out = "" }
assert(cfg.roots ~= "" and cfg.out ~= "", "roots=A,B,... and out=DIR are required")
local members = {}
for root in tostring(cfg.roots):gmatch("[^,]+") do members[#members + 1] = { root = root } end
local keys = { "observation.state", "action" }
local ds = lr.dataset.mixture { mixture = members, stats = "per_dataset", keys = keys }
-- A state-only policy (the cameras are not what this checks), two of LeRobot's modes.
local policy = lr.policy.new({ type = "mlp", hidden_dims = { 8 } }, ds,
                             { normalization_mapping = { STATE = "MEAN_STD", ACTION = "MIN_MAX" } })
policy:save_pretrained(cfg.out .. "/policy")
local batch = ds:loader({ batch_size = #ds, shuffle = false, num_workers = 1 }):next()
local normalized = policy:preprocess(batch)
local tensors = {}
for _, key in ipairs({ "observation.state", "action", "dataset_index" }) do
  tensors["raw." .. key] = batch[key]
  tensors["normalized." .. key] = normalized[key]
end
lr.save_safetensors(cfg.out .. "/batch.safetensors", tensors)
print(string.format("per_dataset_stats_write: %d samples of %d datasets", #ds, #members))
