-- pi0 and pi05 from Lua on the tiny geometry and tokenizer shipped for the CPU recipes
-- (recipes/assets/pi_tiny): lr.policy.new from a dataset, the parameters that get gradients (all but
-- LeRobot's eight: the two dead lm_heads and the parts of the last VLM layer that only feed the unused
-- prefix output), the plain-mean loss that ignores action_is_pad (as LeRobot 0.6.1), the save/load
-- round trip with geometry.json, openpi's checkpoint layout, select_action's queue over predict_action_chunk, gradient
-- checkpointing bit-identical to without, both freezing options (frozen parts and never-gradient
-- tensors untouched by AdamW with weight decay), LeRobot's bf16 dtype split, and the errors a recipe
-- author meets.
local lr = require "lrhost"
local t = require "testlib"

local work = os.tmpname()
os.remove(work)
os.execute("mkdir -p '" .. work .. "'")
local root = work .. "/data"
lr.dataset.synth { out = root, episodes = 3, images = true, wrist = true, image_size = 24, max_length = 12, seed = 4 }
local plain = lr.dataset.lerobot { root = root }

local function config(type, changes)
  local base = { geometry = "lrhost/pi_tiny", tokenizer_name = "lrhost/pi_tiny", chunk_size = 4, n_action_steps = 2,
                 image_resolution = { 32, 32 }, tokenizer_max_length = 24, max_state_dim = 8, max_action_dim = 8,
                 empty_cameras = 1 }
  for k, v in pairs(changes or {}) do base[k] = v end
  return lr.policy.defaults(type, base)
end

-- The eight tensors LeRobot never gives a gradient (pi0.md §1.1), at the tiny depth of 2.
local NEVER_GRAD = {
  ["model.paligemma_with_expert.paligemma.lm_head.weight"] = true,
  ["model.paligemma_with_expert.gemma_expert.lm_head.weight"] = true,
  ["model.paligemma_with_expert.paligemma.model.language_model.norm.weight"] = true,
}
for _, part in ipairs { "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj", "post_attention_layernorm" } do
  NEVER_GRAD["model.paligemma_with_expert.paligemma.model.language_model.layers.1." .. part .. ".weight"] = true
end

local function grads(policy)
  local with, without = {}, {}
  for name, p in pairs(policy:named_parameters()) do
    if p.grad then with[name] = p.grad:clone() else without[name] = true end
  end
  return with, without
end

local function count(set)
  local n = 0
  for _ in pairs(set) do n = n + 1 end
  return n
end

for _, type in ipairs { "pi0", "pi05" } do
  lr.manual_seed(1)
  local policy = lr.policy.new(config(type), plain)
  t.eq(policy:type_name(), type, "type")
  local ds = lr.dataset.lerobot { root = root, delta_timestamps = policy:delta_timestamps(plain:meta().fps) }
  local batch = ds:loader { batch_size = 2, shuffle = false, num_workers = 1 }:next()
  local norm = policy:preprocess(batch)
  t.eq(norm["observation.language.tokens"].shape, { 2, 24 }, type .. ": tokens padded to tokenizer_max_length")
  lr.manual_seed(5)
  norm.noise = lr.randn(2, 4, 8)
  norm.time = lr.tensor { 0.3, 0.85 }

  policy:train()
  local loss = policy:forward(norm)
  loss:backward()
  local with, without = grads(policy)
  t.eq(without, NEVER_GRAD, type .. ": exactly LeRobot's eight tensors get no gradient")
  t.eq(count(with), type == "pi0" and 82 or 85, type .. ": parameters with a gradient")

  -- action_is_pad does not change the loss (LeRobot 0.6.1 ignores it for pi0/pi05).
  local padded = {}
  for k, v in pairs(norm) do padded[k] = v end
  padded.action_is_pad = lr.ones(2, 4, { dtype = "bool" })
  t.eq(policy:forward(padded):item(), loss:item(), type .. ": action_is_pad ignored")

  -- Round trip: geometry.json beside LeRobot's files, the same loss.
  local dir = work .. "/" .. type
  policy:save_pretrained(dir)
  t.truthy(io.open(dir .. "/geometry.json") ~= nil, type .. ": geometry.json saved")
  local cfg_text = io.open(dir .. "/config.json"):read("*a")
  t.truthy(not cfg_text:find('"geometry"') and not cfg_text:find('"tokenizer_name"'),
           type .. ": lrhost's own fields stay out of config.json")
  local loaded = lr.policy.load(dir)
  loaded:train()
  t.eq(loaded:forward(norm):item(), loss:item(), type .. ": same loss after save/load")
  -- The loaded policy's config rebuilds it at its own geometry (not LeRobot's 4 B parameters).
  local rebuilt = lr.policy.new(loaded:config())
  t.eq(rebuilt:num_parameters(), policy:num_parameters(), type .. ": policy:config() of a loaded folder rebuilds it")
  -- ... with its tokenizer too, which the folder keeps in the preprocessor's tokenizer step.
  t.eq(loaded:config().tokenizer_name, "lrhost/pi_tiny", type .. ": the loaded policy's tokenizer")
  local with_data = lr.policy.new(loaded:config(), plain)
  t.eq(with_data:preprocess(batch)["observation.language.tokens"]:equal(norm["observation.language.tokens"]), true,
       type .. ": rebuilt from a loaded policy's config, the same tokens")

  -- openpi's layout (no "model." prefix, embed_tokens tied to paligemma.lm_head and stored once, no
  -- expert lm_head, the other variant's time-MLP names) loads explicitly, to the same loss.
  local openpi_dir = work .. "/" .. type .. "_openpi"
  os.execute("cp -r '" .. dir .. "' '" .. openpi_dir .. "'")
  local P = "model.paligemma_with_expert."
  local original = lr.load_safetensors(dir .. "/model.safetensors")
  local openpi = {}
  for name, tensor in pairs(original) do
    local key = name:gsub("^model%.", "")
    if type == "pi0" then key = key:gsub("^action_time_mlp_", "time_mlp_")
    else key = key:gsub("^time_mlp_", "action_time_mlp_") end
    openpi[key] = tensor
  end
  openpi["paligemma_with_expert.paligemma.lm_head.weight"] =
    original[P .. "paligemma.model.language_model.embed_tokens.weight"]
  openpi["paligemma_with_expert.paligemma.model.language_model.embed_tokens.weight"] = nil
  openpi["paligemma_with_expert.gemma_expert.lm_head.weight"] = nil
  lr.save_safetensors(openpi_dir .. "/model.safetensors", openpi, { producer = "test" })
  for _, file_backed in ipairs { false, true } do
    local from_openpi = lr.policy.load(openpi_dir, { file_backed = file_backed })
    from_openpi:train()
    t.eq(from_openpi:forward(norm):item(), loss:item(), type .. ": openpi layout, same loss")
    local params = from_openpi:named_parameters()
    t.truthy(params[P .. "gemma_expert.lm_head.weight"]:abs():max():item() == 0, type .. ": absent expert head is zeros")
  end

  -- A key missing from the file: strict loading names it; strict = false keeps the initial value when
  -- copying, but a file-backed build has none to keep, which is an error naming the key.
  local partial = {}
  for name, tensor in pairs(original) do
    if name ~= "model.action_out_proj.bias" then partial[name] = tensor end
  end
  lr.save_safetensors(openpi_dir .. "/model.safetensors", partial, { producer = "test" })
  t.raises(function() lr.policy.load(openpi_dir) end, "missing keys 'model.action_out_proj.bias'", type .. ": strict")
  t.truthy(lr.policy.load(openpi_dir, { strict = false }) ~= nil, type .. ": strict = false keeps the initial value")
  t.raises(function() lr.policy.load(openpi_dir, { strict = false, file_backed = true }) end,
           "'model.action_out_proj.bias' is not in the file", type .. ": file-backed without the key")

  -- Gradient checkpointing: loss and every gradient bit-identical.
  local checkpointed = lr.policy.load(dir, { config = { gradient_checkpointing = true } })
  checkpointed:train()
  local loss_ckpt = checkpointed:forward(norm)
  loss_ckpt:backward()
  t.eq(loss_ckpt:item(), loss:item(), type .. ": checkpointing: same loss")
  local with_ckpt = grads(checkpointed)
  t.eq(count(with_ckpt), count(with), type .. ": checkpointing: same parameters with gradients")
  for name, g in pairs(with) do
    t.truthy(with_ckpt[name] and with_ckpt[name]:equal(g), type .. ": checkpointing: gradient of " .. name)
  end

  -- select_action pops predict_action_chunk's first n_action_steps actions, then predicts again.
  loaded:eval()
  local obs = {}
  for k, v in pairs(norm) do
    if k:find("^observation%.") then obs[k] = v end
  end
  lr.manual_seed(9)
  local chunk = loaded:predict_action_chunk(obs)
  t.eq(chunk.shape, { 2, 4, 2 }, type .. ": chunk (batch, chunk_size, action dims)")
  loaded:reset()
  lr.manual_seed(9)
  t.truthy(loaded:select_action(obs):equal(chunk:select(1, 0)), type .. ": first queued action")
  t.truthy(loaded:select_action(obs):equal(chunk:select(1, 1)), type .. ": second queued action")
  lr.manual_seed(10)
  t.truthy(not loaded:select_action(obs):equal(chunk:select(1, 0)), type .. ": queue refilled after n_action_steps")

  -- Freezing: the frozen parts and the never-gradient tensors are untouched by an AdamW step with
  -- weight decay (no gradient: no update, no decay, as torch.optim.AdamW).
  for _, case in ipairs { { freeze_vision_encoder = true, frozen = "%.vision_tower%." },
                          { train_expert_only = true, frozen = "%.paligemma%." } } do
    local frozen = lr.policy.load(dir, { config = { freeze_vision_encoder = case.freeze_vision_encoder or false,
                                                    train_expert_only = case.train_expert_only or false } })
    frozen:train()
    local before = {}
    for name, p in pairs(frozen:named_parameters()) do before[name] = p:detach():clone() end
    local opt = lr.optim.adamw(frozen:param_groups(), { lr = 1e-2, weight_decay = 0.1 })
    opt:zero_grad()
    frozen:forward(norm):backward()
    opt:step()
    local moved, still = 0, 0
    for name, p in pairs(frozen:named_parameters()) do
      local same = p:detach():equal(before[name])
      if name:find(case.frozen) or NEVER_GRAD[name] then
        t.truthy(same, type .. ": untouched " .. name)
        still = still + 1
      elseif not same then
        moved = moved + 1
      end
    end
    t.truthy(still > 8 and moved > 0, type .. ": frozen and trained parts both present")
  end

  -- LeRobot's bf16 mode: Gemma linears and embeddings bf16; vision tower, projector, norms, heads fp32.
  local bf16 = lr.policy.new(config(type, { dtype = "bfloat16" }), plain)
  local dtypes = {}
  for name, p in pairs(bf16:named_parameters()) do dtypes[name] = p.dtype end
  t.eq(dtypes[P .. "paligemma.model.language_model.layers.0.self_attn.q_proj.weight"], "bfloat16", type .. ": bf16 q_proj")
  t.eq(dtypes[P .. "paligemma.model.language_model.embed_tokens.weight"], "bfloat16", type .. ": bf16 embeddings")
  t.eq(dtypes[P .. "gemma_expert.model.layers.0.mlp.up_proj.weight"], "bfloat16", type .. ": bf16 expert MLP")
  t.eq(dtypes[P .. "paligemma.lm_head.weight"], "bfloat16", type .. ": bf16 dead head")
  t.eq(dtypes[P .. "paligemma.model.vision_tower.vision_model.embeddings.patch_embedding.weight"], "float32",
       type .. ": fp32 vision tower")
  t.eq(dtypes[P .. "paligemma.model.multi_modal_projector.linear.weight"], "float32", type .. ": fp32 projector")
  t.eq(dtypes[P .. "paligemma.model.language_model.layers.0.input_layernorm.weight"], "float32", type .. ": fp32 norm")
  t.eq(dtypes["model.action_out_proj.weight"], "float32", type .. ": fp32 head")
  bf16:train()
  local bf16_loss = bf16:forward(norm)
  t.truthy(bf16_loss.dtype == "float32" and bf16_loss:item() == bf16_loss:item(), type .. ": bf16 loss finite fp32")
end

-- Errors name the field and what was expected.
t.raises(function() lr.policy.new(config("pi0", { geometry = work .. "/nowhere.json" }), plain) end,
         "cannot read " .. work .. "/nowhere.json", "missing geometry file")
local bad = work .. "/bad_geometry.json"
local f = io.open(bad, "w")
f:write('{"vlm": {"hidden_size": 64}, "expert": {}, "vision": {}}')
f:close()
t.raises(function() lr.policy.new(config("pi0", { geometry = bad }), plain) end, "'vlm' has no 'intermediate_size'",
         "incomplete geometry")
t.raises(function() lr.policy.new(config("pi05", { image_resolution = { 32, 24 } }), plain) end, "must be square",
         "non-square image_resolution")
t.raises(function() lr.policy.new(config("pi0", { image_resolution = { 36, 36 } }), plain) end,
         "not a multiple of the vision patch size", "resolution vs patch")
t.raises(function() lr.policy.new(config("pi0", { use_peft = true }), plain) end, "'use_peft' = true", "PEFT refused")
local policy = lr.policy.new(config("pi0"), plain)
local ds = lr.dataset.lerobot { root = root, delta_timestamps = policy:delta_timestamps(plain:meta().fps) }
local norm = policy:preprocess(ds:loader { batch_size = 2, shuffle = false, num_workers = 1 }:next())
-- A real camera missing from the batch is fed as an empty one, as LeRobot does (with a warning).
local top = norm["observation.images.top"]
norm["observation.images.top"] = nil
policy:train()
t.truthy(policy:forward(norm):item() > 0, "missing real camera fed as empty")
norm["observation.images.top"] = top
norm["observation.images.side"] = norm["observation.images.wrist"]
t.raises(function() policy:forward(norm) end, "not one of the policy's cameras", "unknown camera")

os.execute("rm -rf '" .. work .. "'")
t.done()
