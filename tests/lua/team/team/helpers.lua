-- A stand-in for a team recipe library, found through LRHOST_PATH (see test_module_path.lua).
return { name = "team helpers", double = function(x) return 2 * x end }
