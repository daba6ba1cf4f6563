-- Closed-loop evaluation on the built-in pushing task (the `lerobot-eval` of lrhost): the policy
-- drives the simulator (lr.env.push) through its own processors and `select_action` (its action
-- queue, ACT's temporal ensembling, Diffusion's observation history), episode by episode. Episode
-- e uses seed `seed + e`, whatever the number of ranks; the episodes are dealt round-robin to the
-- ranks and the per-episode results summed across them, so every rank returns the same summary.
-- Rank 0 writes <out_dir>/summary.json and the rank that plays episode e < videos writes
-- <out_dir>/videos/episode_<e>.mp4.
--   local eval = require "closed_loop_eval"
--   local summary = eval.run(lr, acc, policy, { episodes = 50, videos = 4, out_dir = dir })
-- Rank 0 shows the progress (episodes done, success so far, ETA) on its status line on a terminal;
-- `progress_log = true` also logs it each tenth of the episodes off a terminal.
--   summary.success_rate, summary.success_ci95 = {low, high}, summary.mean_return, ...
local M = {}

M.DEFAULTS = { episodes = 50, videos = 4, seed = 100000, max_steps = 80, fps = 10, progress_log = false }

-- Wilson score interval for a success rate (95 %): unlike p ± 1.96·sqrt(p(1-p)/n) it stays inside
-- [0, 1] and is not empty at 0 or n successes.
function M.wilson_interval(successes, n)
  if n == 0 then return { 0, 1 } end
  local z = 1.959963984540054
  local p = successes / n
  local denominator = 1 + z * z / n
  local centre = (p + z * z / (2 * n)) / denominator
  local half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
  -- Exact bounds at 0 and n successes (the formula gives them up to rounding, e.g. 5.6e-17).
  local low = successes == 0 and 0 or math.max(0, centre - half)
  local high = successes == n and 1 or math.min(1, centre + half)
  return { low, high }
end

-- The simulator's observation keys; a policy that needs anything else cannot be evaluated here.
local ENV_FEATURES = { ["observation.state"] = true, ["observation.images.top"] = true,
                       ["observation.images.wrist"] = true }

local function camera_settings(policy)
  local inputs = policy:config().input_features or {}
  local image_size, wrist = nil, false
  for key, feature in pairs(inputs) do
    if not ENV_FEATURES[key] then
      error(string.format("closed-loop evaluation runs the built-in pushing task (lr.env.push), which has no "
                          .. "'%s'; the policy was trained on another dataset", key), 3)
    end
    if key:find("^observation%.images%.") then
      image_size = feature.shape[2]
      if feature.shape[2] ~= feature.shape[3] then
        error(string.format("policy camera '%s' is %dx%d; the pushing task's cameras are square", key,
                            feature.shape[2], feature.shape[3]), 3)
      end
      if key == "observation.images.wrist" then wrist = true end
    end
  end
  return image_size or 64, wrist
end

local function options_with_defaults(options)
  local o = {}
  for k, v in pairs(M.DEFAULTS) do o[k] = v end
  for k, v in pairs(options or {}) do
    if M.DEFAULTS[k] == nil and k ~= "out_dir" then
      error("closed_loop_eval.run: unknown option '" .. tostring(k) .. "' (expected episodes, videos, seed, "
            .. "max_steps, fps, progress_log, out_dir)", 3)
    end
    o[k] = v
  end
  if o.episodes < 1 then error("closed_loop_eval.run: episodes must be >= 1, got " .. o.episodes, 3) end
  if o.videos < 0 then error("closed_loop_eval.run: videos must be >= 0, got " .. o.videos, 3) end
  return o
end

-- One episode: returns success (0/1), return, final distance, steps; `video` (a path or nil) gets
-- the rollout as mp4.
local function play(lr, acc, policy, env, video, fps)
  policy:reset()
  local observation = env:reset()
  -- Language policies (whose preprocessor tokenizes a task) get the episode's instruction, phrased as in
  -- the dataset.
  local tasks = policy:needs_task() and { env:task() } or nil
  local frames = video and { env:render() } or nil
  local episode_return, done = 0, false
  while not done do
    local batch = {}
    for key, value in pairs(observation) do batch[key] = acc:to_device(value:unsqueeze(0)) end
    local action = lr.no_grad(function()
      return policy:postprocess(policy:select_action(policy:preprocess(batch, tasks)))
    end)
    local reward, terminated, truncated
    observation, reward, terminated, truncated = env:step(action:to("cpu"))
    episode_return = episode_return + reward
    done = terminated or truncated
    if frames then frames[#frames + 1] = env:render() end
  end
  if frames then lr.video.write(video, lr.stack(frames), fps) end
  return env:is_success() and 1 or 0, episode_return, env:final_distance(), env:steps()
end

-- `dir`, or dir_2, dir_3, ... when an earlier evaluation already wrote a summary there: a new
-- evaluation of the same step never replaces an earlier one. Every rank decides before any rank can
-- write a summary (that happens after the collective that ends the evaluation), so all agree.
local function unused_dir(dir)
  local candidate, n = dir, 1
  while true do
    local f = io.open(candidate .. "/summary.json", "r")
    if not f then return candidate end
    f:close()
    n = n + 1
    candidate = dir .. "_" .. n
  end
end

function M.run(lr, acc, policy, options)
  local o = options_with_defaults(options)
  if o.out_dir then o.out_dir = unused_dir(o.out_dir) end
  local image_size, wrist = camera_settings(policy)
  local was_training = policy:is_training()
  policy:eval()
  -- Row e: success, return, final distance, steps of episode e (zero on the ranks that did not play it).
  local rows = {}
  -- Episodes done, success so far and ETA on rank 0's status line (and, with progress_log, as log
  -- lines off a terminal), so that a long evaluation never looks hung.
  local progress = acc:eval_progress { episodes = o.episodes, log_lines = o.progress_log }
  for e = 0, o.episodes - 1 do
    local row = { 0, 0, 0, 0 }
    if e % acc.world_size == acc.rank then
      local env = lr.env.push { seed = o.seed + e, max_steps = o.max_steps, image_size = image_size,
                                second_camera = wrist }
      local video = (o.out_dir and e < o.videos) and string.format("%s/videos/episode_%03d.mp4", o.out_dir, e) or nil
      row = { play(lr, acc, policy, env, video, o.fps) }
      progress:episode_done(row[1] == 1)
    end
    for _, v in ipairs(row) do rows[#rows + 1] = v end
  end
  progress:finish()
  local totals = acc:all_reduce(lr.tensor(rows, { dtype = "float64" }):view(o.episodes, 4)):tolist()
  if was_training then policy:train() end

  local successes, returns, distances, episodes = 0, 0, 0, {}
  for e = 1, o.episodes do
    local r = totals[e]
    successes, returns, distances = successes + r[1], returns + r[2], distances + r[3]
    episodes[e] = { episode = e - 1, seed = o.seed + e - 1, success = r[1] == 1, ["return"] = r[2],
                    final_distance = r[3], steps = math.floor(r[4] + 0.5) }
  end
  local summary = {
    episodes = o.episodes, successes = math.floor(successes + 0.5), success_rate = successes / o.episodes,
    success_ci95 = M.wilson_interval(successes, o.episodes), mean_return = returns / o.episodes,
    mean_final_distance = distances / o.episodes, max_steps = o.max_steps, seed = o.seed,
    per_episode = episodes, out_dir = o.out_dir,
  }
  if o.out_dir and acc.is_main_process then lr.write_json(o.out_dir .. "/summary.json", summary) end
  return summary
end

-- The summary as metrics for acc:log (TensorBoard, metrics.jsonl).
function M.metrics(summary)
  return { ["eval/success_rate"] = summary.success_rate, ["eval/mean_return"] = summary.mean_return,
           ["eval/mean_final_distance"] = summary.mean_final_distance }
end

return M
