// Telling consequences from causes by the words the backends use. The patterns are the messages of
// Gloo's TCP transport, NCCL's remote-error and watchdog reports, c10d's TCPStore client, and
// lrhost's own collective timeout (dist/c10d_comm.cpp); anything else (a Lua error, a shape
// mismatch, a failed rendezvous, an out-of-memory error) is a cause.
#include "host/launch/error_kind.hpp"

#include <array>
#include <string_view>

namespace lrhost::launch {
namespace {

constexpr std::array<std::string_view, 12> kPeerWentAway{
    "Connection closed by peer",                     // Gloo: the peer process exited
    "Connection reset by peer",                      // Gloo / sockets: the peer died mid-transfer
    "Broken pipe",                                   // a write to a peer that is gone
    "Timed out waiting",                             // Gloo's own timeout text, if it surfaces unwrapped
    "ncclRemoteError",                               // NCCL: a remote rank failed
    "remote process exited",                         // NCCL's description of ncclRemoteError
    "NCCL communicator was aborted",                 // NCCL: aborted after another rank's failure
    "Watchdog caught collective operation timeout",  // NCCL watchdog timeout
    "Connection was likely closed",                  // TCPStore client: the store went away
    "Did the remote peer crash",                     // same message, other half
    "lost the connection to the rendezvous store",   // lrhost's wording for a store that went away
    "a peer rank went away",                         // lrhost's wording of a failed collective
};

}  // namespace

bool is_consequence(const std::string& text) {
  for (auto pattern : kPeerWentAway)
    if (text.find(pattern) != std::string::npos) return true;
  // lrhost's collective timeout: "collective 'all_reduce' on rank 0 timed out after 3 s: ...".
  auto collective = text.find("collective '");
  return collective != std::string::npos && text.find(" timed out after ", collective) != std::string::npos;
}

}  // namespace lrhost::launch
