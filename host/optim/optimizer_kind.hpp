// The optimizers lrhost builds, as one enum with one name table (torch's names, which LeRobot's
// presets use): a recipe's type name is parsed once where it enters, and the state files, the memory
// plan and the CUDA-graph decision switch over the enum instead of comparing strings.
#pragma once
#include <array>
#include <utility>

#include "host/util/name_table.hpp"

namespace lrhost::optim {

enum class OptimizerKind { adamw, adam, sgd };
inline constexpr util::NameTable kOptimizerKindNames{std::array{std::pair{OptimizerKind::adamw, "adamw"},
                                                                std::pair{OptimizerKind::adam, "adam"},
                                                                std::pair{OptimizerKind::sgd, "sgd"}}};

inline const char* optimizer_kind_name(OptimizerKind kind) {
  return kOptimizerKindNames.name(kind);
}
// Adam and AdamW share their state (step, exp_avg, exp_avg_sq) and their fused and captured steps.
inline bool is_adam_family(OptimizerKind kind) {
  return kind == OptimizerKind::adamw || kind == OptimizerKind::adam;
}

}  // namespace lrhost::optim
