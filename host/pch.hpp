// Precompiled header shared by every target: LibTorch dominates compile time on a 2-core machine,
// so it is parsed once per build configuration instead of once per translation unit.
#pragma once
#include <spdlog/spdlog.h>
#include <torch/torch.h>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>
