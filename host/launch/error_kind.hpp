// Whether a rank's error is a *consequence* of another rank's failure or a *cause* of its own. When
// one rank fails, its peers' collectives fail too (Gloo "Connection closed by peer", NCCL remote
// errors, collective timeouts, a lost store connection); those errors are often recorded and seen
// by the launcher first, but they only echo the real failure. The launcher's root-cause choice
// (root_cause.hpp) prefers causes, so it must tell the two apart from the error text alone.
#pragma once
#include <string>

namespace lrhost::launch {

// True when `text` (an error message with its traceback) says that a collective or the store
// failed because a peer went away or never arrived, as opposed to a failure of this rank's own.
bool is_consequence(const std::string& text);

}  // namespace lrhost::launch
