-- Environments and rollout videos from Lua (bindings/wrap_env.cpp): lr.env.push observations in the
-- dataset item's layout, step results, the expert solving an episode, action tensors of either
-- accepted shape and any dtype, the errors a recipe author meets, and lr.video.write.
local lr = require "lrhost"
local t = require "testlib"

local env = lr.env.push { seed = 52, max_steps = 80, image_size = 32 } -- a start the expert solves
local obs = env:reset()
t.eq(obs["observation.state"].shape, { 6 }, "state shape (unbatched)")
t.eq(obs["observation.state"].dtype, "float32", "state dtype")
t.eq(obs["observation.images.top"].shape, { 3, 32, 32 }, "top camera CHW")
t.eq(obs["observation.images.top"].dtype, "float32", "camera as float")
t.truthy(obs["observation.images.top"]:max():item() <= 1.0, "camera in [0, 1]")
t.eq(obs["observation.images.wrist"], nil, "no wrist camera unless asked")
t.eq(env:steps(), 0, "no steps after reset")
t.eq(env:is_success(), false, "a start is never solved")

local frame = env:render()
t.eq(frame.shape, { 32, 32, 3 }, "render HWC")
t.eq(frame.dtype, "uint8", "render dtype")
t.truthy(frame:permute(2, 0, 1):float():div(255):equal(obs["observation.images.top"]), "render = observation * 255")

-- The expert solves seed 52; the returns add up to the progress toward the goal.
local start_distance = env:final_distance()
local frames, total, terminated, truncated = { frame }, 0, false, false
while not (terminated or truncated) do
  local action = env:expert_action()
  t.eq(action.shape, { 2 }, "expert action shape")
  local reward
  obs, reward, terminated, truncated = env:step(action)
  total = total + reward
  frames[#frames + 1] = env:render()
end
t.eq(terminated, true, "expert reaches the goal")
t.eq(truncated, false, "before max_steps")
t.eq(env:is_success(), true, "is_success after termination")
t.near(total, start_distance - env:final_distance(), 1e-6, "return = progress")
t.truthy(env:final_distance() < 0.07, "final distance within the goal radius")
t.raises(function() env:step(lr.zeros(2)) end, "after the episode ended")

-- Actions: [2] or [1, 2], any dtype; an explicit episode seed; truncation at max_steps.
local short = lr.env.push { max_steps = 2, second_camera = true }
obs = short:reset(7)
t.eq(obs["observation.images.wrist"].shape, { 3, 64, 64 }, "wrist camera")
local same_start = lr.env.push { seed = 6 }
same_start:reset() -- episode 0 of seed 6
t.truthy(same_start:reset()["observation.state"]:equal(obs["observation.state"]), "episode 1 of seed 6 = reset(7)")
local _, _, term1, trunc1 = short:step(lr.tensor({ { 0.01, 0 } }, { dtype = "float64" }))
t.eq({ term1, trunc1 }, { false, false }, "first step goes on")
local _, reward2, _, trunc2 = short:step(lr.zeros(2, { dtype = "int32" }))
t.eq(reward2, 0, "standing still earns nothing")
t.eq(trunc2, true, "truncated at max_steps")
t.eq(short:steps(), 2, "steps")

-- Errors name the key, the argument or the step.
t.raises(function() lr.env.push { sed = 1 } end, "unknown option 'sed'")
t.raises(function() lr.env.push { max_steps = 0 } end, "max_steps must be >= 1, got 0")
t.raises(function() lr.env.push { image_size = 31 } end, "image_size must be an even number >= 16, got 31")
t.raises(function() lr.env.push { seed = -1 } end, "'seed' must be >= 0")
t.raises(function() lr.env.push { second_camera = "yes" } end, "second_camera")
local fresh = lr.env.push {}
t.raises(function() fresh:step(lr.zeros(2)) end, "step() before reset()")
fresh:reset()
t.raises(function() fresh:step(lr.zeros(3)) end, "expected an action of shape [2] or [1, 2], got [3]")
t.raises(function() fresh:step({ 0, 0 }) end, "expected an action Tensor")
t.raises(function() fresh:step(lr.tensor({ 0 / 0, 0 })) end, "the action of step 1 is not finite")

-- Rollout videos: [T, H, W, 3] uint8 frames to an mp4 in a folder that does not exist yet.
local work = os.tmpname()
os.remove(work)
local path = work .. "/videos/episode_0.mp4"
t.eq(lr.video.write(path, lr.stack(frames), 10), #frames, "frames written")
local file = assert(io.open(path, "rb"))
local head = file:read(12)
local size = file:seek("end")
file:close()
t.truthy(size > 0, "video file is not empty")
t.eq(head:sub(5, 8), "ftyp", "mp4 signature")
t.raises(function() lr.video.write(work .. "/bad.mp4", lr.zeros(2, 32, 32, 3), 10) end,
  "video '" .. work .. "/bad.mp4': frames must be a uint8 tensor")
t.raises(function() lr.video.write(work .. "/bad.mp4", nil, 10) end, "frames of video '" .. work .. "/bad.mp4'")
t.raises(function() lr.video.write(work .. "/bad.mp4", lr.stack(frames), 0) end, "fps of video")
os.execute("rm -rf '" .. work .. "'")
-- The episode's instruction, phrased as the dataset's meta/tasks (by the goal's side).
local instructed = lr.env.push { seed = 52 }
local goal_x = instructed:reset()["observation.state"]:tolist()[5]  -- agent x, y, block x, y, goal x, y
t.eq(instructed:task(), goal_x < 0.5 and "push the blue block onto the green target on the left"
                                      or "push the blue block onto the green target on the right", "task by goal side")
t.done()
