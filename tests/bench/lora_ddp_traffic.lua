-- DDP gradient traffic per step, LoRA against full fine-tuning: the tiny pi05 (recipes/assets/pi_tiny,
-- or geometry=FILE) built, saved by rank 0 and loaded by every rank as a pretrained policy, plain or
-- with LoRA on LeRobot's default targets (lora=true); `steps` training steps under DDP, then the bytes
-- the reducer all-reduced per step (acc:ddp_stats) and the trainable parameter count.
--   lrhost --nproc 2 --device cpu tests/bench/lora_ddp_traffic.lua [lora=true] [geometry=FILE]
local lr = require "lrhost"
local cfg = lr.config { lora = false, geometry = "", batch_size = 2, steps = 3, seed = 0, work = "" }
local acc = lr.accelerator(cfg)
local geometry = cfg.geometry ~= "" and cfg.geometry or "lrhost/pi_tiny"
local features = { inputs = { ["observation.state"] = { 6 }, ["observation.images.top"] = { 3, 32, 32 } },
                   outputs = { action = { 6 } } }
local dir = (cfg.work ~= "" and cfg.work or os.getenv("LRHOST_RUN_DIR") or "/tmp") .. "/lora_ddp_traffic_base"
acc:on_main(function()
  lr.manual_seed(cfg.seed)
  lr.policy.new({ type = "pi05", geometry = geometry, tokenizer_name = "lrhost/pi_tiny", image_resolution = { 32, 32 },
                  chunk_size = 10, n_action_steps = 10, tokenizer_max_length = 16 }, features):save_pretrained(dir)
end)
acc:wait_for_everyone()
lr.manual_seed(cfg.seed)
local changes = cfg.lora and { peft = { method_type = "LORA" } } or {}
local policy = lr.policy.load(dir, { config = changes })
local opt = lr.optim.adamw(policy:param_groups(), { lr = 1e-4 })
acc:prepare(policy, opt)
policy:train()
lr.manual_seed(cfg.seed + acc.rank)
local b = cfg.batch_size
local batch = { ["observation.state"] = lr.randn(b, 6), ["observation.images.top"] = lr.rand(b, 3, 32, 32),
                ["observation.language.tokens"] = lr.randint(0, 100, { b, 16 }),
                ["observation.language.attention_mask"] = lr.ones(b, 16, { dtype = "bool" }),
                action = lr.randn(b, 10, 6), action_is_pad = lr.zeros(b, 10, { dtype = "bool" }) }
for _ = 1, cfg.steps do
  acc:backward(policy:forward(batch))
  opt:step()
  opt:zero_grad()
end
local stats = acc:ddp_stats()
local trainable = 0
for _, row in ipairs(policy:weight_table()) do
  if row.trainable then trainable = trainable + row.numel end
end
acc:on_main(function()
  print(string.format("lora_ddp_traffic: %s, %d rank(s), %d trainable parameters: %d bytes all-reduced per step in %d "
                      .. "bucket(s) (%d synced steps)", cfg.lora and "LoRA" or "full", acc.world_size, trainable,
                      stats.bytes_per_step, stats.buckets, stats.synced_steps))
end)
