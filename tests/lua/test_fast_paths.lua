-- lr.fast_paths: lrhost's exact-math speed-ups are off by default (LeRobot parity), can be turned on and off
-- from a recipe, and an ACT training step computes the same loss either way (fp32 rounding only:
-- folded frozen batch norm and the channels-last trunk sum in another order). Unknown keys and
-- non-boolean values are errors that name them.
local lr = require "lrhost"
local t = require "testlib"

local defaults = lr.fast_paths()
t.eq(defaults.fold_frozen_batch_norm, false, "folding is off by default")
t.eq(defaults.channels_last, false, "channels-last is off by default")
lr.fast_paths { fold_frozen_batch_norm = true, channels_last = true }

local features = { inputs = { ["observation.state"] = { 4 }, ["observation.images.top"] = { 3, 64, 96 } },
                   outputs = { action = { 4 } } }
lr.manual_seed(0)
local policy = lr.policy.new({ type = "act", dim_model = 32, n_heads = 4, dim_feedforward = 64, latent_dim = 8,
                               chunk_size = 4, n_action_steps = 4, n_encoder_layers = 1, n_decoder_layers = 1,
                               n_vae_encoder_layers = 1, dropout = 0 }, features)
policy:train()
local batch = { ["observation.state"] = lr.randn(2, 4), ["observation.images.top"] = lr.rand(2, 3, 64, 96),
                action = lr.randn(2, 4, 4), action_is_pad = lr.zeros(2, 4, { dtype = "bool" }) }
local function loss()
  lr.manual_seed(5)  -- the VAE's sample
  return policy:forward(batch):item()
end
local fast = loss()
local off = lr.fast_paths { fold_frozen_batch_norm = false, channels_last = false }
t.eq(off.fold_frozen_batch_norm, false, "folding turned off")
t.eq(off.channels_last, false, "channels-last turned off")
local plain = loss()
t.near(fast, plain, 1e-5 * math.abs(plain), "loss with and without the fast paths")
t.eq(lr.fast_paths { channels_last = true }.channels_last, true, "channels-last turned on again")
t.eq(lr.fast_paths().fold_frozen_batch_norm, false, "settings not named stay as they were")
lr.fast_paths { fold_frozen_batch_norm = true }

t.raises(function() lr.fast_paths { fold_batch_norm = false } end, "unknown option 'fold_batch_norm'",
         "unknown key")
t.raises(function() lr.fast_paths { channels_last = "no" } end, "channels_last", "a string instead of a boolean")
t.done()
