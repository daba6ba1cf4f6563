-- lrhost's side of the pi0 / pi05 interop tests; pi_oracle.py is LeRobot 0.6.1's side.
--
--   lrhost tests/interop/pi_driver.lua dir=DIR inputs=IN.safetensors tasks=IN.tasks.json out=OUT.safetensors
--       [resave=DIR2]
--     The protocol of vla_protocol.lua (the same as SmolVLA's) on the pretrained folder DIR written by
--     `pi_oracle.py make` (or re-saved by lrhost): lrhost takes the tiny geometry from DIR/geometry.json and
--     the tokenizer "google/paligemma-3b-pt-224" from HF_HUB_CACHE (run_pi_interop.sh exports both sides').
local lr = require "lrhost"

local cfg = lr.config {
  dir = "",
  inputs = "",
  tasks = "",
  out = "",
  resave = "",
}

local out = require("vla_protocol").run(cfg)
print(string.format("lrhost pi: loaded %s strictly, loss %.8f, wrote %s", cfg.dir, out.loss:item(), cfg.out))
