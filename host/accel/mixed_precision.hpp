// accelerator.mixed_precision, accelerate's --mixed_precision: the autocast mode a training step runs
// under ("no": the weights' dtype; "bf16"; "fp16", with loss scaling), with its one name table.
#pragma once
#include <c10/core/ScalarType.h>

#include <optional>

#include "host/util/name_table.hpp"

namespace lrhost::accel {

enum class MixedPrecision { no, bf16, fp16 };

inline constexpr util::NameTable kMixedPrecisionNames{std::array{std::pair{MixedPrecision::no, "no"},
                                                                 std::pair{MixedPrecision::bf16, "bf16"},
                                                                 std::pair{MixedPrecision::fp16, "fp16"}}};

// The autocast dtype of the mode; nullopt for "no".
inline std::optional<c10::ScalarType> autocast_dtype(MixedPrecision mode) {
  switch (mode) {
    case MixedPrecision::bf16:
      return c10::kBFloat16;
    case MixedPrecision::fp16:
      return c10::kHalf;
    case MixedPrecision::no:
      break;
  }
  return std::nullopt;
}

}  // namespace lrhost::accel
