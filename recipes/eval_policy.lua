-- Closed-loop evaluation of a trained policy on the built-in pushing task: what `lrhost eval` runs.
-- Loads the policy from a checkpoint (a run folder, its checkpoints/<step> or `last`, or a LeRobot
-- pretrained folder), rolls it out for `episodes` episodes split across the ranks, and writes
-- eval/<step>/summary.json (<step> named as its checkpoints/<step> folder) (success rate with its 95 % interval, mean return, mean final distance,
-- per-episode results) and the first `videos` rollouts as mp4 next to it (eval/<step>_2, ... when that
-- step was evaluated before: nothing earlier is replaced).
-- weights = "ema" evaluates the checkpoint's EMA weights (pretrained_model_ema/, a run trained with
-- ema.enable=true), with results in eval/<step>_ema/.
-- dataset_name picks one dataset's stats of a policy trained on a mixture with dataset.stats=per_dataset.
--   lrhost eval outputs/lrhost/<run> --episodes 50 --videos 4 --nproc 2 [--weights ema] [--dataset-name mine]
--   lrhost recipes/eval_policy.lua checkpoint=outputs/lrhost/<run>/checkpoints/last episodes=20
local lr = require "lrhost"
local eval = require "closed_loop_eval"

local cfg = lr.config {
  checkpoint = "",   -- run folder, checkpoints/<step>, or a pretrained folder (config.json + model.safetensors)
  episodes = eval.DEFAULTS.episodes,
  videos = eval.DEFAULTS.videos,
  seed = eval.DEFAULTS.seed,          -- episode e starts from seed + e
  max_steps = eval.DEFAULTS.max_steps,
  out_dir = "",      -- "": <run>/eval/<step> (<pretrained folder>/eval for a bare pretrained folder)
  weights = "live",  -- "live": pretrained_model/; "ema": the EMA weights, pretrained_model_ema/
  dataset_name = "", -- a policy trained with dataset.stats=per_dataset: the dataset whose stats normalize
}
if cfg.weights ~= "live" and cfg.weights ~= "ema" then
  error(string.format("weights=%s: expected \"live\" or \"ema\"", cfg.weights))
end

local function exists(path)
  local f = io.open(path, "r")
  if f then f:close() end
  return f ~= nil
end

-- The pretrained folder to load, the step it was saved at (nil when unknown) and the default output.
local function locate(dir)
  dir = dir:gsub("/+$", "")
  if exists(dir .. "/checkpoints/last/pretrained_model/config.json") then dir = dir .. "/checkpoints/last" end
  if exists(dir .. "/pretrained_model/config.json") then
    local real = io.popen("readlink -f '" .. dir:gsub("'", "'\\''") .. "'"):read("*l") or dir
    local name = real:match("([^/]+)$")
    local run = real:match("^(.*)/checkpoints/[^/]+$") or real
    if cfg.weights == "ema" then
      if not exists(dir .. "/pretrained_model_ema/config.json") then
        error(string.format("weights=ema: %s has no pretrained_model_ema/ (the run kept no EMA: train with "
                            .. "ema.enable=true)", dir), 2)
      end
      return dir .. "/pretrained_model_ema", tonumber(name), run .. "/eval/" .. name .. "_ema"
    end
    return dir .. "/pretrained_model", tonumber(name), run .. "/eval/" .. name
  end
  if exists(dir .. "/config.json") then
    if cfg.weights == "ema" then
      error(string.format("weights=ema needs a checkpoint (a run or step folder with pretrained_model_ema/); %s is "
                          .. "a pretrained folder: evaluate it as it is", dir), 2)
    end
    return dir, nil, dir .. "/eval"
  end
  error(string.format("checkpoint=%s: not a run folder, checkpoint step folder or pretrained folder (no "
                      .. "pretrained_model/config.json, checkpoints/last or config.json in it)", dir), 2)
end

if cfg.checkpoint == "" then error("checkpoint=DIR is required: a run folder, checkpoints/<step> or a pretrained folder") end
local pretrained, step, default_out = locate(cfg.checkpoint)
local out_dir = cfg.out_dir ~= "" and cfg.out_dir or default_out
local acc = lr.accelerator(cfg)
local policy = lr.policy.load(pretrained, { dataset_name = cfg.dataset_name })
policy:to(acc.device)
lr.log.info(string.format("evaluating %s (%s, step %s) on %d episodes over %d rank(s)", pretrained,
                          policy:type_name(), step or "?", cfg.episodes, acc.world_size))
local started = lr.clock()
local summary = eval.run(lr, acc, policy, { episodes = cfg.episodes, videos = cfg.videos, seed = cfg.seed,
                                            max_steps = cfg.max_steps, out_dir = out_dir, progress_log = true })
acc:on_main(function()
  lr.log.info(string.format("success %d/%d = %.1f%% (95%% interval %.1f-%.1f%%), mean return %.3f, "
                            .. "mean final distance %.3f, %.1f s; summary: %s/summary.json", summary.successes,
                            summary.episodes, 100 * summary.success_rate, 100 * summary.success_ci95[1],
                            100 * summary.success_ci95[2], summary.mean_return, summary.mean_final_distance,
                            lr.clock() - started, summary.out_dir))
end)
