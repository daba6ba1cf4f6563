// Preemption: which signals ask a job to save a checkpoint and stop (`--save-on-signal`), and the
// exit code such a job ends with. A scheduler that wants its node back (Slurm's --signal, a
// Kubernetes pod deletion, a spot-instance notice) sends SIGTERM or SIGUSR1 some seconds ahead; the
// ranks finish their current step, agree on it, save one checkpoint there together and exit with
// kPreemptedExitCode, so that a requeued job (resume = "auto") continues with no step lost. The
// choice travels from the launcher to its ranks (and from a user to torchrun/Slurm ranks) in
// $LRHOST_SAVE_ON_SIGNAL, e.g. "TERM,USR1" or "none".
#pragma once
#include <string>
#include <vector>

namespace lrhost::util {

// 75 is EX_TEMPFAIL of <sysexits.h>, "temporary failure, the user is invited to retry": distinct
// from an error (1, 2), from a death by signal as shells report it (128 + N: 143 for SIGTERM) and
// from lrhost's other codes, so a requeue script (`[ $? -eq 75 ] && scontrol requeue ...`) or a
// Kubernetes podFailurePolicy (onExitCodes: [75]) can tell "saved and stopped on request" apart.
inline constexpr int kPreemptedExitCode = 75;

inline constexpr const char* kSaveOnSignalVariable = "LRHOST_SAVE_ON_SIGNAL";
// Both signals schedulers use for "stop soon": SIGTERM (Kubernetes, torchrun, scancel, spot
// notices) and SIGUSR1 (the usual Slurm --signal choice).
inline constexpr const char* kDefaultSaveSignals = "TERM,USR1";

// Parses a comma-separated list of signal names (TERM, SIGTERM, USR1, SIGUSR1, USR2, HUP, INT,
// XCPU, case-insensitive) or "none" (an empty list). Anything else is a util::ConfigError naming
// `option` and the accepted values.
std::vector<int> parse_save_signals(const std::string& text, const std::string& option = "--save-on-signal");

// The canonical text of a list: "TERM,USR1", or "none" when empty.
std::string format_save_signals(const std::vector<int>& signals);

// $LRHOST_SAVE_ON_SIGNAL parsed (the default when unset or empty).
std::vector<int> save_signals_from_environment();

}  // namespace lrhost::util
