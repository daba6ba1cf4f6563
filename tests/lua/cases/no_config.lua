-- A recipe that never calls lr.config.
local lr = require "lrhost"
print(lr.version)
