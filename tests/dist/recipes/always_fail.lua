-- Fails on every attempt.
error("this recipe always fails (restart " .. tostring(os.getenv("LRHOST_RESTART_COUNT")) .. ")")
