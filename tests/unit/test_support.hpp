// Shared helpers of the unit tests: committed fixture files, scratch folders (a fresh folder under the
// system temp folder, removed with everything in it at scope exit), small file and text helpers, and
// the text of an expected error. Every test file shares one translation unit with others (unity
// build), so helpers that several files need live here, once.
#pragma once
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "host/io/atomic_dir.hpp"
#include "host/policy/registry.hpp"
#include "host/util/error.hpp"

namespace lrhost::test {

// Scratch folders are removed with the product's remove_tree (see host/io/atomic_dir.hpp for why
// not std::filesystem::remove_all); a failure to clean up never fails a test.
inline void remove_tree(const std::filesystem::path& root) {
  try {
    io::remove_tree(root);
  } catch (const std::exception&) {
  }
}

// The message and hint of the error `f` throws, which must be an `E`; fails the test otherwise.
template <typename E, typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& error) {
    return std::string(error.what()) + " || " + error.hint();
  } catch (const std::exception& error) {
    FAIL("threw the wrong exception type: " << error.what());
  }
  FAIL("no exception was thrown");
  return {};
}

// util::describe (message and hint) of the `E` that `body` throws; "" when it throws nothing (an
// exception of another type propagates and fails the test).
template <typename E = util::Error>
std::string described_error(const std::function<void()>& body) {
  try {
    body();
  } catch (const E& error) {
    return util::describe(error);
  }
  return "";
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}
inline bool contains(const std::vector<std::string>& items, const std::string& item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

// Writes `text` to `file` byte for byte, replacing it, creating its folder first.
inline void write_text(const std::filesystem::path& file, const std::string& text) {
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path());
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << text;
}

// The bytes of `file` ("" when it cannot be read).
inline std::string read_bytes(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// An MLP policy with layers [7,5]+[7], [4,7]+[4], [3,4]+[3]: 42 + 32 + 15 = 89 parameters in three
// MlpLinear wrap units.
inline std::shared_ptr<policy::Policy> small_mlp() {
  return policy::create_policy(
      nlohmann::json{{"type", "mlp"}, {"input_dim", 5}, {"output_dim", 3}, {"hidden_dims", {7, 4}}}, {});
}

struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& name = "scratch") {
    static std::atomic<int> counter{0};
    path = std::filesystem::temp_directory_path() /
           ("lrhost_test_" + name + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    remove_tree(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { remove_tree(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::filesystem::path operator/(const std::string& name) const { return path / name; }
};

// Sets (or, given nullopt, unsets) an environment variable for one scope, restoring it after.
struct ScopedEnv {
  std::string name;
  std::optional<std::string> saved;
  ScopedEnv(std::string variable, const std::optional<std::string>& value) : name(std::move(variable)) {
    if (const char* old = std::getenv(name.c_str())) saved = old;
    if (value)
      setenv(name.c_str(), value->c_str(), 1);
    else
      unsetenv(name.c_str());
  }
  ~ScopedEnv() {
    if (saved)
      setenv(name.c_str(), saved->c_str(), 1);
    else
      unsetenv(name.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
};

// tests/fixtures/<folder>/<name>: in $LRHOST_TEST_FIXTURES (ctest sets it), else under the current
// folder when that is the repository root (no path of the clone is compiled in: see
// cmake/build_speed.cmake). Empty when not found.
inline std::filesystem::path fixture_path(const std::string& folder, const std::string& name) {
  namespace fs = std::filesystem;
  std::vector<fs::path> candidates;
  if (const char* fixtures = std::getenv("LRHOST_TEST_FIXTURES"))
    candidates.push_back(fs::path(fixtures) / folder / name);
  candidates.push_back(fs::current_path() / "tests" / "fixtures" / folder / name);
  for (const auto& candidate : candidates)
    if (fs::exists(candidate)) return candidate;
  return {};
}

// The tiny pi0/pi05 the unit tests build (recipes/assets/pi_tiny's geometry and tokenizer): one
// 32x32 camera plus an empty one, 3 state and 2 action dims padded to 8, 4-step chunks, 12 tokens.
// Callers add what they vary (dtype, freezing, checkpointing).
inline nlohmann::json tiny_pi_table(const std::string& type) {
  const auto asset = fixture_path("../../recipes/assets", "pi_tiny");
  REQUIRE_FALSE(asset.empty());
  return {{"type", type},
          {"geometry", asset.string()},
          {"tokenizer_name", asset.string()},
          {"chunk_size", 4},
          {"n_action_steps", 4},
          {"image_resolution", {32, 32}},
          {"max_state_dim", 8},
          {"max_action_dim", 8},
          {"tokenizer_max_length", 12},
          {"empty_cameras", 1},
          {"input_features",
           {{"observation.state", {{"type", "STATE"}, {"shape", {3}}}},
            {"observation.images.top", {{"type", "VISUAL"}, {"shape", {3, 32, 32}}}}}},
          {"output_features", {{"action", {{"type", "ACTION"}, {"shape", {2}}}}}}};
}

// The LoRA adapter parameters (".lora_" in the name) whose gradient is missing or all zero after a
// backward, sorted: the adapters no output of the forward reads.
inline std::vector<std::string> lora_parameters_without_gradient(const torch::nn::Module& module) {
  std::vector<std::string> names;
  for (const auto& p : module.named_parameters())
    if (p.key().find(".lora_") != std::string::npos &&
        !(p.value().grad().defined() && p.value().grad().abs().sum().item<double>() > 0))
      names.push_back(p.key());
  std::sort(names.begin(), names.end());
  return names;
}

// Flips bit `bit` of byte `offset` of `file` in place (twice restores it): silent corruption.
inline void flip_bit(const std::filesystem::path& file, uint64_t offset, int bit) {
  std::fstream io(file, std::ios::in | std::ios::out | std::ios::binary);
  io.seekg(static_cast<std::streamoff>(offset));
  char byte = 0;
  io.read(&byte, 1);
  byte = static_cast<char>(byte ^ (1 << bit));
  io.seekp(static_cast<std::streamoff>(offset));
  io.write(&byte, 1);
}

}  // namespace lrhost::test
