-- Requires a module that exists nowhere: the error must name the folders searched and LRHOST_PATH.
local helpers = require "team_helpers_not_installed"
return helpers
