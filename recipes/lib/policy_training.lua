-- The training loop the shipped policy recipes share (act_ddp.lua, diffusion_ddp.lua): LeRobot's
-- `lerobot-train` flow written out in Lua. It splits the dataset's episodes into training and
-- held-out ones, builds the policy from the training set (features, normalization stats), asks the
-- policy which frame windows it needs (delta timestamps), takes the optimizer and scheduler from the
-- policy's LeRobot preset with the recipe's optimizer table on top, trains data-parallel with
-- checkpoints and resume (cfg.resume: false, true or "auto"), logs the loss and its parts, and ends
-- with a held-out evaluation: the action error of the predicted chunks against a constant action (the
-- training mean). A step whose loss or gradient norm is not finite stops the run before anything is
-- saved (the accelerator's divergence guard names the step and the last checkpoint;
-- accelerator.nonfinite = "skip" drops a bounded number of such steps instead), and a non-finite
-- evaluation never passes.
-- While it trains, rank 0 shows a live status line on a terminal (step k/N, %, steps/s, samples/s,
-- elapsed, ETA, loss) and every log_freq steps logs the metrics with the phase timings (data wait,
-- forward, backward, optimizer, checkpoint; max over ranks), which also go to <output>/metrics.jsonl
-- and <output>/tensorboard/ (a resumed run continues both without duplicated steps). With eval_freq
-- it also rolls the policy out in the built-in task's simulator (recipes/lib/closed_loop_eval.lua).
-- With ema.enable it keeps an exponential moving average of the trained weights (LeRobot main's
-- --ema.*: diffusers' EMAModel rule), saved as pretrained_model_ema/ in every checkpoint; the
-- rollouts and the held-out evaluation then use the EMA weights (ema.use_for_eval), and the end
-- reports both the live and the EMA held-out MSE.
--   local training = require "policy_training"
--   local cfg = lr.config(training.defaults { policy = lr.policy.defaults("act", {...}) })
--   training.run(lr, cfg)
local lr = require "lrhost"
local closed_loop = require "closed_loop_eval"

local M = {}

-- The fields every policy recipe shares, with their defaults; a recipe gives only what differs.
local BASE = {
  seed = 1000,
  steps = 2000,
  batch_size = 8,          -- per rank (LeRobot's default)
  num_workers = 2,         -- loader threads per rank
  log_freq = 50,
  save_freq = 1000,        -- 0: only at the end
  save_async = false,      -- true: a save copies the state to host memory and training goes on while a
                           -- background writer writes it (docs/checkpoints.md)
  save_checkpoint = true,  -- false: no checkpoints at all (lerobot-train's --save_checkpoint=false)
  keep_last = 0,           -- 0 keeps every checkpoint
  output_dir = "",         -- "": the run folder (outputs/lrhost/<time>_<recipe>)
  resume = "auto",        -- false: always start at step 1; true: must resume; "auto": if a checkpoint exists
  eval_episodes = 4,       -- the last dataset episodes are held out for the action-MSE evaluation at the end
                           -- (0: none, no such evaluation; at most half the episodes, see split_episodes)
  eval_batches = 32,       -- ... over at most this many batches
  min_gain = 0.0,          -- fail unless baseline MSE / policy MSE reaches this (0: report only)
  -- Closed-loop evaluation (rollouts in the built-in task's simulator, not the held-out episodes)
  -- every eval_freq steps and at the end (0: off), `eval.episodes` shared by all ranks; results in
  -- <output>/eval/<step>/ and the metrics (eval/success_rate, ...).
  eval_freq = 0,
  eval = { episodes = 20, videos = 2, max_steps = 80 },
  -- root: a dataset folder; repo_id: a LeRobot dataset by its hub id (user/name), found where LeRobot
  -- keeps it ($HF_LEROBOT_HOME/user/name, ~/.cache/huggingface/lerobot/user/name; never downloaded);
  -- neither: the built-in task. episodes: the episode indices to use ([]: all), as LeRobot's
  -- --dataset.episodes; the last eval_episodes of them (at most half) are held out.
  -- mixture: several datasets trained on as one (docs/datasets.md#mixtures): a list of
  -- { repo_id = | root =, weight =, rename_map =, episodes =, name = }, its JSON text, or "@file.json"
  -- ("": none, root / repo_id above). weighting: "" (given when any weight is set, else frames),
  -- "frames" (LeRobot's merge), "given" or "balanced" (weight x frames); stats: "pooled" (LeRobot's
  -- aggregate_stats) or "per_dataset" (each sample by its dataset's stats); mixed_fps: allow datasets of different fps (windows served in seconds).
  -- episodes then counts the mixture's episodes one dataset after another, as the merged dataset would.
  dataset = { root = "", repo_id = "", episodes = {},
    mixture = "", weighting = "", stats = "pooled", mixed_fps = false,
    -- LeRobot's DatasetConfig defaults: cameras normalized with ImageNet's mean/std instead of the
    -- dataset's, and its ImageTransformsConfig (training frames only; off unless enable = true).
    use_imagenet_stats = true,
    image_transforms = {
      enable = false, max_num_transforms = 3, random_order = false,
      tfs = {
        brightness = { type = "ColorJitter", weight = 1.0, kwargs = { brightness = { 0.8, 1.2 } } },
        contrast = { type = "ColorJitter", weight = 1.0, kwargs = { contrast = { 0.8, 1.2 } } },
        saturation = { type = "ColorJitter", weight = 1.0, kwargs = { saturation = { 0.5, 1.5 } } },
        hue = { type = "ColorJitter", weight = 1.0, kwargs = { hue = { -0.05, 0.05 } } },
        sharpness = { type = "SharpnessJitter", weight = 1.0, kwargs = { sharpness = { 0.5, 1.5 } } },
        affine = { type = "RandomAffine", weight = 1.0, kwargs = { degrees = { -5.0, 5.0 }, translate = { 0.05, 0.05 } } },
      },
    },
  },
  tolerance_s = 1e-4,      -- how far a frame's time may be from k/fps, in seconds (LeRobot's tolerance_s)
  rename_map = lr.config.map {},  -- dataset key -> policy key, for a pretrained policy's inputs
  -- On top of the policy's preset; grad_clip_norm -1: the preset's (LeRobot's: 10 for ACT, Diffusion and
  -- SmolVLA, 1 for pi0, pi05 and GR00T), a value >= 0 replaces it (0: no clipping).
  optimizer = { grad_clip_norm = -1.0 },
  -- nonfinite: a step with a non-finite loss or gradient norm stops the run ("error") or is dropped
  -- ("skip", at most max_skipped_steps times).
  -- On a GPU, tf32 and cudnn_benchmark as lerobot-train sets them; cuda_graph captures the whole
  -- step (single GPU, Adam/AdamW, static shapes; otherwise it warns and runs eager steps) at the
  -- cost of the per-phase timings (one "train_step" phase).
  -- fsdp: reshard_after_forward true = ZeRO-3 (FULL_SHARD), false = ZeRO-2; wrap_modules "" = the
  -- policy's declared units. Declared for every recipe so that any trains sharded from the command line.
  accelerator = { mixed_precision = "no", gradient_accumulation_steps = 1, nonfinite = "error",
                  max_skipped_steps = 10, tf32 = true, cudnn_benchmark = true, cuda_graph = false,
                  peak_tflops = 0,  -- the device's dense peak for mfu; 0: known GPUs' table (none on CPU)
                  fsdp = { reshard_after_forward = true, wrap_modules = "" } },
  -- dp_shard = 1: DDP replicas; -1 (or the rank count): FSDP, one shard group; with dp_replicate: hybrid.
  parallelism = { dp_shard = 1, dp_replicate = 1 },
  -- The EMA of the weights (docs/ema.md): enable, decay (-1: none, the warm-up schedule), update_after_step,
  -- inv_gamma, power, min_decay, max_decay, use_for_eval, on_main_only (DDP: the shadow on rank 0 only).
  ema = lr.optim.ema_defaults(),
}

local THIS_FILE = debug.getinfo(1, "S").source

-- Raises `message` at the first caller outside this file (the recipe's line that called run or
-- build), however deep the loop's own functions are.
local function recipe_error(message)
  local level = 2
  while true do
    local info = debug.getinfo(level, "S")
    if info == nil then error(message, 2) end
    if info.source ~= THIS_FILE then error(message, level) end
    level = level + 1
  end
end

local function is_list(t)
  return type(t) == "table" and #t > 0
end

-- `base` with `changes` on top: tables merge key by key (a variant changes one accelerator field
-- without restating the others), lists and plain values replace.
local function merged(base, changes)
  local out = setmetatable({}, getmetatable(base))  -- keeps lr.config.map's mark
  for k, v in pairs(base) do out[k] = type(v) == "table" and merged(v, {}) or v end
  for k, v in pairs(changes) do
    if type(v) == "table" and not is_list(v) and type(out[k]) == "table" and not is_list(out[k]) then
      out[k] = merged(out[k], v)
    else
      out[k] = v
    end
  end
  return out
end

-- A step's folder name, as LeRobot names checkpoints (checkpoints/000200): zero-padded to at least 6
-- digits, more when the run's last step needs them. eval/<name> sits beside checkpoints/<name>.
function M.step_name(step, total_steps)
  return string.format("%0" .. math.max(6, #tostring(total_steps)) .. "d", step)
end

-- The shared fields with a recipe's own on top, for lr.config: a variant is a few lines
-- (recipes/act_fsdp.lua), and every field stays overridable from the command line.
function M.defaults(changes)
  if changes ~= nil and type(changes) ~= "table" then
    error("policy_training.defaults: expected a table of fields, got " .. type(changes), 2)
  end
  local cfg = merged(BASE, changes or {})
  if cfg.policy == nil then
    error("policy_training.defaults: give the policy, e.g. policy = lr.policy.defaults(\"act\", {...})", 2)
  end
  -- Every policy can be fine-tuned from a pretrained folder ("": train from scratch).
  if cfg.policy.pretrained_path == nil then cfg.policy.pretrained_path = "" end
  return cfg
end

local function finite(x) return x == x and x > -math.huge and x < math.huge end

-- How the policy's held-out MSE compares with the constant baseline's: "(2.31x better)" only when
-- it is lower, "(1.52x worse)" when higher, "(no better than the baseline)" when equal, and
-- "(not comparable: non-finite MSE)" when either is NaN or infinite.
function M.versus_baseline(policy_mse, baseline_mse)
  if not (finite(policy_mse) and finite(baseline_mse)) then return "(not comparable: non-finite MSE)" end
  if policy_mse < baseline_mse then return string.format("(%.2fx better)", baseline_mse / policy_mse) end
  if policy_mse > baseline_mse then return string.format("(%.2fx worse)", policy_mse / baseline_mse) end
  return "(no better than the baseline)"
end

-- The episodes to use: `chosen` (dataset.episodes, checked against the dataset), or 0..total-1.
local function episode_pool(chosen, total, root)
  if #chosen == 0 then
    local all = {}
    for e = 0, total - 1 do all[#all + 1] = e end
    return all
  end
  local seen = {}
  for i, e in ipairs(chosen) do
    if type(e) ~= "number" or e ~= math.floor(e) or e < 0 or e >= total then
      recipe_error(string.format("dataset.episodes[%d] = %s: expected an episode index in [0, %d) of %s", i,
                                 tostring(e), total, root))
    end
    if seen[e] then recipe_error(string.format("dataset.episodes lists episode %d twice", e)) end
    seen[e] = true
  end
  return chosen
end

-- The pool split into training and held-out episodes (the last ones). The rule (docs/recipe_api.md,
-- eval_episodes): 0 holds out nothing and skips the held-out evaluation; otherwise at most half of
-- the episodes are held out, so a small dataset is never refused and training always keeps at least
-- as many episodes as the evaluation; asking for more holds out half, with a warning that says so.
local function split_episodes(pool, n_eval, acc)
  local total = #pool
  if type(n_eval) ~= "number" or n_eval ~= math.floor(n_eval) or n_eval < 0 then
    recipe_error(string.format("eval_episodes must be a whole number >= 0 (0: no held-out evaluation), got %s",
                               tostring(n_eval)))
  end
  local held = math.min(n_eval, math.floor(total / 2))
  if held < n_eval then
    local what = held == 0
        and string.format("holding out none and skipping the held-out evaluation (training on the %d)", total)
        or string.format("holding out only the last %d and training on %d", held, total - held)
    acc:on_main(function()
      lr.log.warn(string.format("eval_episodes = %d asks for more than half of the %d episode(s) of the dataset: %s; "
                                .. "set eval_episodes=0 to train on every episode, or at most %d", n_eval, total,
                                what, math.floor(total / 2)))
    end)
  end
  local train, held_out = {}, {}
  for i, e in ipairs(pool) do table.insert(i <= total - held and train or held_out, e) end
  return train, held_out
end

-- The dataset folder: dataset.root, else the local copy of dataset.repo_id, else the built-in task.
function M.dataset_root(dataset)
  if dataset.root ~= "" then return dataset.root end
  if dataset.repo_id ~= "" then return lr.dataset.from_repo_id(dataset.repo_id, "dataset.repo_id") end
  return lr.default_dataset()
end

local function has_mixture(dataset)
  local mixture = dataset.mixture
  return mixture ~= nil and mixture ~= "" and not (type(mixture) == "table" and next(mixture) == nil)
end

-- A function opening the run's dataset with the given options (episodes, delta_timestamps, keys,
-- tolerance_s): the mixture when dataset.mixture is set, else the folder of M.dataset_root.
function M.dataset_opener(dataset)
  if not has_mixture(dataset) then
    local root = M.dataset_root(dataset)
    return function(options)
      options.root = root
      return lr.dataset.lerobot(options)
    end, root
  end
  if dataset.root ~= "" or dataset.repo_id ~= "" then
    recipe_error("dataset.mixture lists the datasets: leave dataset.root and dataset.repo_id empty (a dataset of "
                 .. "the mixture is an entry { root = ... } or { repo_id = ... })")
  end
  return function(options)
    options.mixture, options.weighting = dataset.mixture, dataset.weighting
    options.stats, options.mixed_fps = dataset.stats, dataset.mixed_fps
    return lr.dataset.mixture(options)
  end, "dataset.mixture"
end

-- The policy's optimizer preset with the recipe's optimizer table on top (recipe values win).
local function optimizer_options(policy, overrides)
  local options = policy:optimizer_preset()
  for k, v in pairs(overrides) do
    if not (k == "grad_clip_norm" and v < 0) then options[k] = v end
  end
  local kind = options.type
  options.type = nil
  local clip = options.grad_clip_norm
  options.grad_clip_norm = nil
  return kind, options, clip
end

-- Position of offset 0 in the policy's action window: where the current frame's action sits.
local function current_action_offset(policy)
  local deltas = policy:delta_indices().action
  if not deltas then return 0 end
  for i, d in ipairs(deltas) do
    if d == 0 then return i - 1 end
  end
  error("the policy's action window does not contain the current frame", 2)
end

-- Mean squared error of predicted action chunks on the held-out episodes, in action units, against
-- the constant training-mean action; summed over this rank's batches, then reduced over ranks.
local function evaluate(lr, acc, policy, held_out, cfg, mean_action)
  policy:eval()
  local offset = current_action_offset(policy)
  local loader = acc:loader(held_out, { batch_size = cfg.batch_size, shuffle = false, num_workers = cfg.num_workers })
  local batches = math.min(loader:batches_per_epoch(), cfg.eval_batches)
  local sums = lr.zeros(3, { dtype = "float64" })  -- policy squared error, baseline squared error, count
  lr.no_grad(function()
    for _, batch in loader:steps(1, batches) do
      policy:reset()
      -- A mixture normalized per dataset unnormalizes each sample with its dataset's stats.
      local chunk = policy:postprocess(policy:predict_action_chunk(policy:preprocess(batch)), batch.dataset_index)
      local k = chunk:size(1)
      local target = batch.action:narrow(1, offset, k)
      local valid = batch.action_is_pad:narrow(1, offset, k):logical_not():unsqueeze(-1):to("float32")
      local n = valid:sum():item() * target:size(2)
      sums = sums + lr.tensor({ (((chunk - target) ^ 2) * valid):sum():item(),
                                (((target - mean_action:to(acc.device)) ^ 2) * valid):sum():item(), n },
                              { dtype = "float64" })
    end
  end)
  loader:release()
  local totals = acc:all_reduce(sums):tolist()
  local policy_mse, baseline_mse = totals[1] / totals[3], totals[2] / totals[3]
  policy:train()
  return policy_mse, baseline_mse
end

-- The policy to train: a new one from cfg.policy, or, with cfg.policy.pretrained_path (a folder or a
-- hub id in the local Hugging Face cache), the pretrained one fine-tuned as lerobot-train
-- --policy.path does: its weights, its config.json with the policy fields given on the command line
-- on top (lr.config already made cfg.policy that; a field that shapes the weights cannot change), the
-- dataset's normalization stats and tasks, and cfg.rename_map (dataset key -> policy key) in front of
-- its preprocessor.
function M.make_policy(lr, cfg, dataset)
  local pretrained = cfg.policy.pretrained_path
  local renames = cfg.rename_map or {}
  if pretrained ~= nil and pretrained ~= "" then
    -- file_backed: no rank holds the whole model to load it; under FSDP each reads only its shards.
    -- The dataset gives the features config.json leaves empty (LeRobot's default PI05Config() has none).
    local policy = lr.policy.load(pretrained, { rename_map = renames, config = cfg.policy, file_backed = true },
                                  dataset)
    policy:use_dataset(dataset, { use_imagenet_stats = cfg.dataset.use_imagenet_stats })
    policy:train()
    lr.log.info(string.format("fine-tuning %s from %s", policy:type_name(), pretrained))
    return policy
  end
  if next(renames) ~= nil then
    recipe_error("rename_map maps dataset keys onto a pretrained policy's; set policy.pretrained_path, or name the "
                 .. "features as the dataset does")
  end
  local policy_cfg = {}
  for k, v in pairs(cfg.policy) do policy_cfg[k] = v end
  if policy_cfg.pretrained_path == "" then policy_cfg.pretrained_path = nil end
  return lr.policy.new(policy_cfg, dataset, { use_imagenet_stats = cfg.dataset.use_imagenet_stats })
end

-- The loop in named steps, as torchtitan's trainer: M.build makes everything a run needs and resumes,
-- M.step runs one training step, M.after_step logs, saves and evaluates (M.log, M.save,
-- M.evaluate), M.finish ends with the held-out evaluation. A recipe that needs another loop can call
-- the steps it keeps and write the others; `run` is the table they share.

-- Everything a run needs: accelerator, datasets (training and held-out episodes), policy, optimizer,
-- scheduler, loader, checkpoint (resumed), metric sinks and the training meter.
function M.build(lr, cfg)
  local run = { lr = lr, cfg = cfg }
  local acc = lr.accelerator(cfg)
  run.acc = acc
  lr.manual_seed(cfg.seed)
  local open, root = M.dataset_opener(cfg.dataset)
  local meta = open({ keys = {} }):meta()
  if cfg.eval_freq > 0 and meta.robot_type ~= "lrhost_push2d" then
    recipe_error(string.format("eval_freq = %d: closed-loop evaluation needs a simulator, and only the built-in "
                               .. "pushing task has one (dataset %s is robot_type '%s'); set eval_freq=0",
                               cfg.eval_freq, root, meta.robot_type))
  end
  if cfg.eval_freq > 0 and acc.is_sharded then
    -- Episodes end at different steps on different ranks, but a sharded policy's forward is a
    -- collective: every rank would have to run the same number of forwards.
    recipe_error("eval_freq > 0 is not supported with FSDP (each sharded forward is a collective and episodes end "
                 .. "at different steps on each rank); evaluate the saved checkpoints with `lrhost eval RUN_DIR` "
                 .. "instead")
  end
  run.train_episodes, run.eval_episodes = split_episodes(episode_pool(cfg.dataset.episodes, meta.total_episodes, root),
                                                         cfg.eval_episodes, acc)
  if #run.eval_episodes == 0 and cfg.min_gain > 0 then
    recipe_error(string.format("min_gain = %g needs held-out episodes to evaluate, and none are held out "
                               .. "(eval_episodes = %d, %d episodes); set eval_episodes=N or min_gain=0",
                               cfg.min_gain, cfg.eval_episodes, #run.train_episodes))
  end

  -- Features and normalization stats come from the training episodes, like LeRobot's make_policy.
  local plain = open { episodes = run.train_episodes, tolerance_s = cfg.tolerance_s }
  local policy = M.make_policy(lr, cfg, plain)
  local deltas = policy:delta_timestamps(plain:meta().fps)
  run.train = open { episodes = run.train_episodes, delta_timestamps = deltas, tolerance_s = cfg.tolerance_s }
  run.mixture = run.train:mixture()
  -- (An empty episode list would mean every episode.)
  if #run.eval_episodes > 0 then
    run.held_out = open { episodes = run.eval_episodes, delta_timestamps = deltas, tolerance_s = cfg.tolerance_s }
  end
  run.mean_action = plain:column("action"):mean(0)
  plain = nil

  local kind, options, clip = optimizer_options(policy, cfg.optimizer)
  run.clip = clip
  local opt = lr.optim[kind](policy, options)
  local sched_cfg = policy:scheduler_preset()
  if sched_cfg then
    sched_cfg.total_steps = cfg.steps
    run.sched = lr.optim.scheduler(opt, sched_cfg)
  end
  run.output_dir = cfg.output_dir ~= "" and cfg.output_dir or lr.run_dir()
  -- What the policy keeps for training (e.g. a cache of frozen features, shared by the ranks and
  -- kept with the run). Before prepare: such a cache may fingerprint weights that FSDP shards.
  local transforms = cfg.dataset.image_transforms
  policy:prepare_training { cache_dir = run.output_dir .. "/cache", dataset = run.train,
                            augmentation = transforms ~= nil and transforms.enable == true }
  acc:prepare(policy, opt)
  run.policy, run.opt = policy, opt
  -- After prepare: the EMA tracks what this rank trains (under FSDP its shards) and moves by itself
  -- after every applied optimizer step. With on_main_only, ranks other than 0 keep none.
  if cfg.ema.enable then
    run.ema = lr.optim.ema(policy, opt, cfg.ema, acc)
    run.ema_everywhere = not cfg.ema.on_main_only or acc.world_size == 1
    if not run.ema_everywhere and cfg.ema.use_for_eval and cfg.eval_freq > 0 then
      recipe_error("ema.on_main_only = true keeps the EMA weights on rank 0 only, and the eval_freq rollouts run on "
                   .. "every rank: set ema.use_for_eval=false, ema.on_main_only=false or eval_freq=0")
    end
  end
  -- preprocess = policy: batches come out normalized (and tokenized) by the policy's preprocessor, the
  -- steps before its device step (pi05's state prompt) still in host memory, so the loop hands them
  -- straight to acc:train_step.
  run.loader = acc:loader(run.train, { batch_size = cfg.batch_size, seed = cfg.seed, num_workers = cfg.num_workers,
                                       drop_n_last_frames = policy:config().drop_n_last_frames or 0,
                                       image_transforms = transforms, preprocess = policy })
  run.ckpt = lr.checkpoint(run.output_dir, { acc = acc, policy = policy, optimizer = opt, scheduler = run.sched,
                                             ema = run.ema,
                                             loader = run.loader, config = cfg, total_steps = cfg.steps,
                                             keep_last = cfg.keep_last, resume = cfg.resume,
                                             async = cfg.save_async, save_freq = cfg.save_freq,
                                             save_checkpoint = cfg.save_checkpoint })
  -- Everything is built: restore model, optimizer, scheduler, RNG and loader position in one call.
  run.first = run.ckpt:resume() + 1
  -- A resumed checkpoint's processors replace the policy's; their task table is the dataset's.
  if run.first > 1 and policy:needs_task() then policy:set_tasks(run.train) end
  if run.mixture then
    acc:on_main(function()
      for _, line in ipairs(run.train:mixture_report(cfg.steps * acc.effective_batch)) do lr.log.info(line) end
    end)
  end
  lr.log.info(string.format("%s: %d parameters, %d train frames (%d episodes), %d held-out episodes, "
                            .. "effective batch %d, %s lr %.3g, output %s", policy:type_name(),
                            policy:num_parameters(), #run.train, #run.train_episodes, #run.eval_episodes,
                            acc.effective_batch, kind, options.lr, run.output_dir))

  -- Metrics go to the log, <output>/metrics.jsonl and <output>/tensorboard/; a resumed run drops
  -- what the interrupted one logged after its checkpoint, so no step appears twice.
  acc:add_metrics_sink(lr.metrics.jsonl(run.output_dir .. "/metrics.jsonl", { first_step = run.first }))
  acc:add_metrics_sink(lr.metrics.tensorboard(run.output_dir .. "/tensorboard", { first_step = run.first }))
  acc:log_text("config", run.first, cfg)

  -- What a divergence error names: this loop's step numbers and the last good checkpoint.
  acc:guard_context { next_step = run.first, checkpoint = run.ckpt:resumed_from() }
  -- tflops and mfu in the step line when the policy counts its FLOPs (nil otherwise: neither is shown).
  run.meter = acc:training_meter { total_steps = cfg.steps, first_step = run.first,
                                   samples_per_step = cfg.batch_size,
                                   flops_per_sample = policy:training_flops_per_sample() }
  return run
end

-- One training step, the same call eagerly or captured in a CUDA graph (accelerator.cuda_graph):
-- forward, backward, clip, optimizer and scheduler steps, zero_grad, with the meter's phases marked
-- by acc:train_step. `batch` is preprocessed already (the loader's preprocess option). Returns
-- {loss =, parts =, grad_norm =}.
function M.step(run, step, batch)
  run.meter:mark("data")
  local first = step == run.first
  local loss, parts, grad_norm, memory = run.acc:train_step(run.policy, run.opt, batch,
      { max_norm = run.clip, meter = run.meter, scheduler = run.sched, memory_stats = first })
  if memory then
    -- What this rank keeps between steps (FSDP: its shards), the figures `lrhost show` plans.
    run.lr.log.info(string.format("memory per rank (%s): parameters %d, gradients %d, optimizer state %d bytes%s",
                                  run.acc.strategy, memory.parameter_bytes, memory.gradient_bytes,
                                  memory.optimizer_bytes,
                                  run.ema and string.format(", ema %d bytes", run.ema:bytes()) or ""))
  end
  run.meter:end_step(step)
  -- A mixture's per-dataset loss over the log window: each sample's loss summed by its dataset.
  if run.mixture and parts.loss_per_sample then
    local sums, counts = run.train:sum_by_dataset(batch.index, parts.loss_per_sample)
    local window = run.mixture_loss
    run.mixture_loss = window and { sums = window.sums + sums, counts = window.counts + counts }
        or { sums = sums, counts = counts }
  end
  return { loss = loss, parts = parts, grad_norm = grad_norm }
end

-- Every log_freq steps and at the last: the loss, its parts, the gradient norm, the learning rate,
-- the policy's own figures (policy:training_metrics) and the device's peak memory, with the meter's
-- phase timings.
function M.log(run, step, out)
  local cfg, acc = run.cfg, run.acc
  if not (step % cfg.log_freq == 0 or step == cfg.steps) then return end
  local metrics = { loss = out.loss, grdn = out.grad_norm, lr = run.opt:lr() }
  -- The same count on every rank (the guard's verdicts agree), so the metric keys agree too.
  if acc:skipped_nonfinite_steps() > 0 then metrics.skipped_steps = acc:skipped_nonfinite_steps() end
  for name, value in pairs(out.parts) do
    if name:match("_loss$") then metrics[name] = value end
  end
  for name, value in pairs(run.policy:training_metrics()) do metrics[name] = value end
  -- (Every rank logs the same keys: with on_main_only the other ranks hold no EMA, so none are logged.)
  if run.ema and run.ema_everywhere then
    metrics["ema/decay"] = run.ema:decay()
    metrics["ema/step"] = run.ema:step()
  end
  if run.mixture then
    -- Cumulative over all ranks, from the run's first step (a resumed run included); the loader
    -- counts the datasets it samples (those with frames).
    local seen = acc:all_reduce(lr.tensor(run.loader:samples_by_group(), { dtype = "float64" })):tolist()
    local group = 0
    for _, dataset in ipairs(run.mixture.datasets) do
      if dataset.frames > 0 then
        group = group + 1
        metrics["samples_seen/" .. dataset.name] = seen[group]
      end
    end
    -- The mean loss of each dataset's samples since the last log line, over all ranks (a dataset
    -- with no sample in the window has none). Every rank has the same sums after the reduction.
    if run.mixture_loss then
      local sums = acc:all_reduce(run.mixture_loss.sums):tolist()
      local counts = acc:all_reduce(run.mixture_loss.counts):tolist()
      for k, dataset in ipairs(run.mixture.datasets) do
        if counts[k] > 0 then metrics["loss/" .. dataset.name] = sums[k] / counts[k] end
      end
      run.mixture_loss = nil
    end
  end
  local device_memory = acc:device_memory()
  if device_memory then metrics.cuda_peak_gib = device_memory.peak / 2 ^ 30 end
  acc:log(step, metrics, run.meter)  -- adds the phase timings, step_s, samples_per_s, peak_rss_gib
end

-- Every save_freq steps and at the last (unless save_checkpoint = false): a checkpoint, which the
-- divergence guard then names. With save_async, save returns after copying the state to host memory;
-- waiting for the previous save's writer happens inside it, so it is part of checkpoint_s.
function M.save(run, step)
  if not run.ckpt:is_save_step(step) then return end
  run.acc:guard_context { checkpoint = run.ckpt:save(step) }
  run.meter:mark("checkpoint")
end

-- Runs fn() with the EMA weights in the policy (store -> swap -> restore, as LeRobot main's
-- _ema_weights), putting the live ones back even when fn fails.
local function with_ema_weights(ema, fn)
  ema:swap_in()
  local ok, result = pcall(fn)
  ema:swap_out()
  if not ok then error(result, 0) end
  return result
end

-- Whether the evaluations use the EMA weights (ema.use_for_eval, on every rank).
local function evaluates_ema(run)
  return run.ema ~= nil and run.ema_everywhere and run.cfg.ema.use_for_eval
end

-- Every eval_freq steps and at the last (eval_freq > 0): rollouts in the built-in task's simulator,
-- results in <output>/eval/<step>/ and the metrics; with the EMA weights when ema.use_for_eval.
function M.evaluate(run, step)
  local cfg = run.cfg
  if not (cfg.eval_freq > 0 and (step % cfg.eval_freq == 0 or step == cfg.steps)) then return end
  local function rollouts()
    return closed_loop.run(run.lr, run.acc, run.policy, {
      episodes = cfg.eval.episodes, videos = cfg.eval.videos, max_steps = cfg.eval.max_steps,
      out_dir = string.format("%s/eval/%s", run.output_dir, M.step_name(step, cfg.steps)) })
  end
  local summary
  if evaluates_ema(run) then
    run.acc:on_main(function()
      run.lr.log.info(string.format("closed-loop evaluation at step %d with the EMA weights (EMA step %d)", step,
                                    run.ema:step()))
    end)
    summary = with_ema_weights(run.ema, rollouts)
  else
    summary = rollouts()
  end
  run.acc:log(step, closed_loop.metrics(summary))
  run.meter:mark("eval")
end

-- Preemption (docs/multi_gpu.md#preemption): after every step, ask whether a rank received a
-- --save-on-signal signal (SIGTERM, SIGUSR1 by default). acc:stop_requested() is one tiny
-- all-reduce that every rank answers alike, so all ranks stop after this same step. They then save
-- one checkpoint at it together (unless M.save just did) and end the run with lr.exit_preempted(),
-- exit code 75; resume = "auto" (or `lrhost resume`) continues at the next step. Without
-- checkpoints (save_checkpoint = false) the run says that nothing was saved and exits the same way.
function M.preempt_if_requested(run, step)
  local signal = run.acc:stop_requested()
  if not signal then return end
  local cfg, lr = run.cfg, run.lr
  local message
  if cfg.save_checkpoint then
    if not run.ckpt:is_save_step(step) then run.ckpt:save(step) end  -- unless M.save just did
    run.ckpt:wait()  -- with save_async, the job must not exit before that checkpoint is complete
    local dir = run.ckpt:last_dir()
    message = string.format("preempted at step %d (signal %s): checkpoint saved to %s; continue with `%s` or "
                            .. "rerun with resume=auto", step, signal, dir, run.ckpt:resume_command())
  else
    message = string.format("preempted at step %d (signal %s): nothing was saved (save_checkpoint = false); a "
                            .. "rerun starts again at step 1", step, signal)
  end
  run.meter:finish()
  run.acc:on_main(function() lr.log.warn(message) end)
  lr.exit_preempted()
end

function M.after_step(run, step, out)
  M.log(run, step, out)
  M.save(run, step)
  M.evaluate(run, step)
end

-- The end of a run: the held-out action MSE against the constant baseline, logged and checked
-- (finite, and at least min_gain better). Returns {policy_mse =, baseline_mse =, checkpoint =}; without
-- held-out episodes (eval_episodes = 0) only {checkpoint =}, saying that the evaluation is skipped.
function M.finish(run)
  local lr, cfg, acc = run.lr, run.cfg, run.acc
  run.ckpt:wait()  -- an asynchronous save still being written: the run never ends before it is complete
  run.meter:finish()
  if not run.held_out then
    acc:on_main(function()
      lr.log.info(string.format("no held-out episodes (eval_episodes = %d): the held-out action-MSE evaluation is "
                                .. "skipped", cfg.eval_episodes))
    end)
    return { checkpoint = run.ckpt:last_dir() }
  end
  local live_mse, baseline_mse = evaluate(lr, acc, run.policy, run.held_out, cfg, run.mean_action)
  local ema_mse
  if run.ema and run.ema_everywhere then
    ema_mse = with_ema_weights(run.ema, function()
      return (evaluate(lr, acc, run.policy, run.held_out, cfg, run.mean_action))
    end)
  end
  -- The figure checked: the EMA weights' when the evaluations use them.
  local policy_mse = evaluates_ema(run) and ema_mse or live_mse
  local gain = baseline_mse / policy_mse
  acc:on_main(function()
    lr.log.info(string.format("held-out action MSE over %d episodes: policy %.4g, constant baseline %.4g %s",
                              #run.eval_episodes, live_mse, baseline_mse, M.versus_baseline(live_mse, baseline_mse)))
    if ema_mse then
      lr.log.info(string.format("held-out action MSE over %d episodes: policy with the EMA weights (step %d) %.4g %s%s",
                                #run.eval_episodes, run.ema:step(), ema_mse, M.versus_baseline(ema_mse, baseline_mse),
                                evaluates_ema(run) and " (ema.use_for_eval: the figure min_gain checks)" or ""))
    end
  end)
  -- Written so that NaN fails: every comparison with NaN is false.
  if not (finite(policy_mse) and finite(baseline_mse)) then
    error(string.format("the held-out action MSE is not finite (policy %s, baseline %s): training diverged",
                        policy_mse, baseline_mse))
  end
  if not (gain >= cfg.min_gain) then
    error(string.format("the policy beats the constant baseline only %.2fx on held-out episodes (min_gain = %.2f)",
                        gain, cfg.min_gain))
  end
  return { policy_mse = policy_mse, live_mse = live_mse, ema_mse = ema_mse, baseline_mse = baseline_mse,
           checkpoint = run.ckpt:last_dir() }
end

function M.run(lr, cfg)
  local run = M.build(lr, cfg)
  for step, batch in run.loader:steps(run.first, cfg.steps) do
    M.after_step(run, step, M.step(run, step, batch))
    M.preempt_if_requested(run, step)
  end
  return M.finish(run)
end

return M
