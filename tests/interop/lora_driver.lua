-- lrhost's side of the LoRA interop tests; lora_oracle.py is LeRobot 0.6.1 + PEFT 0.18's side.
--
--   lrhost tests/interop/lora_driver.lua mode=wrap src=DIR out=OUT config=default|second|openpi seed=S
--     As lerobot-train --policy.path=DIR --peft.*: lr.manual_seed(S) right before lr.policy.load(DIR,
--     { config = { peft = ... } }) attaches the adapters (the base's weights are loaded first, so the
--     seed is drawn only by the adapters' init, as in LeRobot where it is set just before wrapping);
--     save_pretrained(OUT) writes the adapter folder.
--   lrhost tests/interop/lora_driver.lua mode=run dir=DIR inputs=IN.safetensors out=OUT
--     Loads the adapter folder DIR (base from its adapter_config.json) and writes what lora_oracle.py
--     run does: OUT (the protocol of vla_protocol.lua), OUT.s1 (again after one AdamW step), OUT.after
--     (after.<name> of every trainable parameter after a second step); trained=DIR2 also saves the
--     trained adapter folder there (for `lrhost checkpoint merge`).
local lr = require "lrhost"
local protocol = require "vla_protocol"

local cfg = lr.config { mode = "", src = "", dir = "", out = "", inputs = "", config = "default", seed = 42,
                        trained = "" }

-- lora_oracle.py's configurations as policy.peft tables (SECOND there).
local second_full = { smolvla = { "state_proj" }, pi0 = { "state_proj" }, pi05 = { "time_mlp_in" } }
local function peft_table(policy_type)
  if cfg.config == "default" then return { method_type = "LORA" } end
  if cfg.config == "openpi" then return { method_type = "LORA", preset = "openpi" } end
  assert(cfg.config == "second", "config must be default, second or openpi, got " .. cfg.config)
  return { method_type = "LORA", r = 8, lora_alpha = 32, target_module_names = { "q_proj", "v_proj", "action_out_proj" },
           full_training_modules = second_full[policy_type], use_rslora = true }
end

local function wrap()
  assert(cfg.src ~= "" and cfg.out ~= "", "src= and out= are required")
  local policy_type = lr.read_json(cfg.src .. "/config.json").type
  lr.manual_seed(cfg.seed)
  local policy = lr.policy.load(cfg.src, { config = { peft = peft_table(policy_type) } })
  policy:save_pretrained(cfg.out)
  local trainable = 0
  for _, row in ipairs(policy:weight_table()) do
    if row.trainable then trainable = trainable + row.numel end
  end
  print(string.format("lrhost wrapped %s %s with LoRA (%s): %d trainable of %d; saved %s", policy_type, cfg.src,
                      cfg.config, trainable, policy:num_parameters(), cfg.out))
end

local function run()
  assert(cfg.dir ~= "" and cfg.inputs ~= "" and cfg.out ~= "", "dir=, inputs= and out= are required")
  local policy = lr.policy.load(cfg.dir, { strict = true })
  local inputs = lr.load_safetensors(cfg.inputs)
  local tasks = lr.read_json(cfg.inputs .. ".tasks.json")
  -- lora_oracle.py's ADAMW.
  local optimizer = lr.optim.adamw(policy:param_groups(), { lr = 1e-3, betas = { 0.9, 0.95 }, eps = 1e-8,
                                                            weight_decay = 1e-2 })
  local first = protocol.outputs(policy, inputs, tasks)
  optimizer:step()
  optimizer:zero_grad()
  local second = protocol.outputs(policy, inputs, tasks)
  optimizer:step()
  local after = {}
  for _, row in ipairs(policy:weight_table()) do
    if row.trainable then after["after." .. row.name] = policy:named_parameters()[row.name]:detach():contiguous() end
  end
  if cfg.trained ~= "" then policy:save_pretrained(cfg.trained) end
  lr.save_safetensors(cfg.out, first, { producer = "lrhost" })
  lr.save_safetensors(cfg.out .. ".s1", second, { producer = "lrhost" })
  lr.save_safetensors(cfg.out .. ".after", after, { producer = "lrhost" })
  print(string.format("lrhost LoRA from %s: loss %.8f then %.8f; wrote %s(.s1, .after)", cfg.dir, first.loss:item(),
                      second.loss:item(), cfg.out))
end

if cfg.mode == "wrap" then wrap()
elseif cfg.mode == "run" then run()
else error("mode must be wrap or run, got '" .. cfg.mode .. "'") end
