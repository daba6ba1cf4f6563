// Precompiled header shared by every target: LibTorch dominates compile time on a 2-core machine,
// so it is parsed once per build configuration instead of once per translation unit.
#pragma once
#include <torch/torch.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>
