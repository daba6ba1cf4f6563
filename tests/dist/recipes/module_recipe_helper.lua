-- The sibling module of module_recipe.lua: builds the mlp policy, optimizer and loader, and runs
-- one training step. `version` shows which copy of the module ran.
local M = { version = "v1" }

function M.build(lr, acc, cfg)
  lr.manual_seed(cfg.seed)
  local ds = lr.dataset.lerobot { root = lr.default_dataset(), keys = { "observation.state", "action" },
                                  episodes = { 0, 1 } }
  local policy = lr.policy.new({ type = "mlp", hidden_dims = { 16 } }, ds)
  local opt = lr.optim.adamw(policy, { lr = 1e-3 })
  acc:prepare(policy, opt)
  return policy, opt, acc:loader(ds, { batch_size = 8, seed = cfg.seed, num_workers = 1 })
end

function M.train_step(acc, policy, opt, batch)
  acc:backward(policy:forward(policy:preprocess(batch)))
  opt:step()
  opt:zero_grad()
end

return M
