-- Process-level helpers for the launcher tests, through LuaJIT's ffi: sleeping, killing oneself,
-- ignoring SIGTERM. Not an lrhost API; the tests need a rank to misbehave in precise ways.
local ffi = require "ffi"
ffi.cdef [[
int getpid(void);
int kill(int pid, int sig);
int usleep(unsigned int usec);
typedef void (*lrhost_test_handler)(int);
lrhost_test_handler signal(int sig, lrhost_test_handler handler);
]]

local sys = {}

function sys.rank() return tonumber(os.getenv("RANK") or "0") end
function sys.pid() return ffi.C.getpid() end
function sys.sleep(seconds) ffi.C.usleep(math.floor(seconds * 1e6)) end
function sys.kill_self(signal) ffi.C.kill(ffi.C.getpid(), signal) end
function sys.ignore_sigterm() ffi.C.signal(15, ffi.cast("lrhost_test_handler", 1)) end  -- SIG_IGN

-- Sleeps in short steps forever: a rank waiting on something that never comes.
function sys.sleep_forever()
  while true do sys.sleep(0.05) end
end

return sys
