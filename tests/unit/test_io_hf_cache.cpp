// Unit tests of host/io/hf_cache: which cache folder the environment names, hub-id syntax, and
// resolving a folder or a hub id (ref or commit) through a cache laid out as huggingface_hub does,
// with the error that names the id, the folders and the `hf download` command, and installing a
// shipped asset into that cache.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "host/io/atomic_dir.hpp"
#include "host/io/hf_cache.hpp"
#include "host/util/error.hpp"
#include "host/util/shipped_paths.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using lrhost::io::resolve_model_dir;

namespace {
// Sets (or unsets) environment variables for one test and restores them after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value->c_str(), 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// A cache holding lerobot/smolvla_base at two commits, refs main and v1 (huggingface_hub's layout).
void fill_cache(const fs::path& root) {
  fs::path repo = root / "models--lerobot--smolvla_base";
  fs::create_directories(repo / "refs");
  fs::create_directories(repo / "snapshots" / "0123abcd");
  fs::create_directories(repo / "snapshots" / "89efcafe");
  std::ofstream(repo / "refs" / "main") << "0123abcd";  // huggingface_hub writes no newline
  std::ofstream(repo / "refs" / "v1") << "89efcafe\n";
}
}  // namespace

TEST_CASE("hf cache: the folder comes from HF_HUB_CACHE, then HF_HOME, then ~/.cache") {
  ScopedEnv legacy("HUGGINGFACE_HUB_CACHE", std::nullopt);
  ScopedEnv xdg("XDG_CACHE_HOME", std::nullopt);
  {
    ScopedEnv cache("HF_HUB_CACHE", "/data/hub");
    ScopedEnv home("HF_HOME", "/data/hf");
    CHECK(lrhost::io::hf_hub_cache_dir() == fs::path("/data/hub"));
  }
  {
    ScopedEnv cache("HF_HUB_CACHE", std::nullopt);
    ScopedEnv home("HF_HOME", "/data/hf");
    CHECK(lrhost::io::hf_hub_cache_dir() == fs::path("/data/hf/hub"));
  }
  ScopedEnv cache("HF_HUB_CACHE", std::nullopt);
  ScopedEnv home("HF_HOME", std::nullopt);
  ScopedEnv user_home("HOME", "/home/robot");
  CHECK(lrhost::io::hf_hub_cache_dir() == fs::path("/home/robot/.cache/huggingface/hub"));
}

TEST_CASE("hf cache: hub ids") {
  CHECK(lrhost::io::looks_like_hub_id("lerobot/smolvla_base"));
  CHECK(lrhost::io::looks_like_hub_id("HuggingFaceTB/SmolVLM2-500M-Video-Instruct"));
  CHECK(lrhost::io::looks_like_hub_id("gpt2"));
  CHECK_FALSE(lrhost::io::looks_like_hub_id("a/b/c"));
  CHECK_FALSE(lrhost::io::looks_like_hub_id("/abs/path"));
  CHECK_FALSE(lrhost::io::looks_like_hub_id("org/../x"));
  CHECK_FALSE(lrhost::io::looks_like_hub_id("org/name with space"));
  CHECK_FALSE(lrhost::io::looks_like_hub_id("org/-name"));
  CHECK_FALSE(lrhost::io::looks_like_hub_id(""));
}

TEST_CASE("hf cache: a folder wins; a hub id resolves to its snapshot by ref or commit") {
  lrhost::test::TempDir scratch("hf_cache_resolve");
  const fs::path& cache = scratch.path;
  fill_cache(cache);
  ScopedEnv env("HF_HUB_CACHE", cache.string());
  CHECK(resolve_model_dir(cache.string(), "policy.pretrained_path") == cache);
  fs::path repo = cache / "models--lerobot--smolvla_base";
  CHECK(resolve_model_dir("lerobot/smolvla_base", "policy.pretrained_path") == repo / "snapshots" / "0123abcd");
  CHECK(resolve_model_dir("lerobot/smolvla_base", "x", "v1") == repo / "snapshots" / "89efcafe");
  CHECK(resolve_model_dir("lerobot/smolvla_base", "x", "89efcafe") == repo / "snapshots" / "89efcafe");
}

TEST_CASE("hf cache: what is missing is an error naming the id, the folders and the download command") {
  lrhost::test::TempDir scratch("hf_cache_missing");
  const fs::path& cache = scratch.path;
  fill_cache(cache);
  ScopedEnv env("HF_HUB_CACHE", cache.string());
  try {
    resolve_model_dir("HuggingFaceTB/SmolVLM2-500M-Video-Instruct", "vlm_model_name");
    FAIL("no error for an id that is not in the cache");
  } catch (const lrhost::util::ConfigError& error) {
    std::string message = error.what();
    CHECK(message.find("vlm_model_name = 'HuggingFaceTB/SmolVLM2-500M-Video-Instruct'") != std::string::npos);
    CHECK(message.find((cache / "models--HuggingFaceTB--SmolVLM2-500M-Video-Instruct" / "snapshots").string()) !=
          std::string::npos);
    CHECK(message.find("never downloads") != std::string::npos);
    CHECK(error.hint().find("hf download HuggingFaceTB/SmolVLM2-500M-Video-Instruct") != std::string::npos);
  }
  CHECK_THROWS_WITH_AS(resolve_model_dir("lerobot/smolvla_base", "x", "v2"), doctest::Contains("revision 'v2'"),
                       lrhost::util::ConfigError);
  CHECK_THROWS_WITH_AS(resolve_model_dir("./no/such/folder", "policy.pretrained_path"),
                       doctest::Contains("no such folder, and not a Hugging Face hub id"), lrhost::util::ConfigError);
}

TEST_CASE("lerobot datasets: a repo id resolves where LeRobot keeps datasets, never downloaded") {
  lrhost::test::TempDir dir("lerobot_home");
  ScopedEnv xdg("XDG_CACHE_HOME", std::nullopt);
  ScopedEnv user("HOME", (dir / "user").string());
  ScopedEnv hf_home("HF_HOME", (dir / "hf").string());
  {
    ScopedEnv lerobot_home("HF_LEROBOT_HOME", (dir / "lerobot").string());
    auto homes = lrhost::io::lerobot_dataset_homes();
    REQUIRE(homes.size() == 3);
    CHECK(homes[0] == dir / "lerobot");
    CHECK(homes[1] == dir / "hf" / "lerobot");
    CHECK(homes[2] == dir / "user" / ".cache" / "huggingface" / "lerobot");
    fs::create_directories(dir / "hf" / "lerobot" / "user" / "so100");
    CHECK(lrhost::io::resolve_lerobot_dataset("user/so100", "dataset.repo_id") ==
          dir / "hf" / "lerobot" / "user" / "so100");
    fs::create_directories(dir / "lerobot" / "user" / "so100");  // the first home wins
    CHECK(lrhost::io::resolve_lerobot_dataset("user/so100", "dataset.repo_id") == dir / "lerobot" / "user" / "so100");
  }
  std::string message;
  try {
    lrhost::io::resolve_lerobot_dataset("user/absent", "dataset.repo_id");
  } catch (const lrhost::util::ConfigError& error) {
    message = lrhost::util::describe(error);
  }
  CHECK(message.find("dataset.repo_id = 'user/absent': the dataset is not on this machine") != std::string::npos);
  CHECK(message.find((dir / "hf" / "lerobot" / "user" / "absent").string()) != std::string::npos);
  CHECK(message.find((dir / "user" / ".cache" / "huggingface" / "lerobot" / "user" / "absent").string()) !=
        std::string::npos);
  CHECK(message.find("hf download user/absent --repo-type dataset") != std::string::npos);
  message.clear();
  try {
    lrhost::io::resolve_lerobot_dataset("../etc", "dataset.repo_id");
  } catch (const lrhost::util::ConfigError& error) {
    message = error.what();
  }
  CHECK(message.find("'../etc' is not a dataset repo id") != std::string::npos);
}

TEST_CASE("hf cache: a shipped asset is installed into the cache as huggingface_hub lays a model out") {
  lrhost::test::TempDir scratch("hf_cache_install");
  ScopedEnv env("HF_HUB_CACHE", (scratch.path / "hub").string());
  const fs::path asset = lrhost::util::shipped_asset_dir("lrhost/smolvla_tiny_vlm");
  REQUIRE(fs::is_directory(asset));
  // Resolving the id uses the shipped folder and leaves the cache holding the same files at refs/main.
  CHECK(resolve_model_dir("lrhost/smolvla_tiny_vlm", "vlm_model_name") == asset);
  const fs::path repo = scratch.path / "hub" / "models--lrhost--smolvla_tiny_vlm";
  const std::string revision = lrhost::io::read_text_file(repo / "refs" / "main");
  CHECK(revision.size() == 40);  // a hub commit id's length, and no newline (huggingface_hub reads it raw)
  CHECK(revision.find_first_not_of("0123456789abcdef") == std::string::npos);
  const fs::path snapshot = repo / "snapshots" / revision;
  for (const char* name : {"config.json", "tokenizer.json", "tokenizer_config.json", "processor_config.json"})
    CHECK(lrhost::io::read_text_file(snapshot / name) == lrhost::io::read_text_file(asset / name));
  // Installing again changes nothing; other files get another revision, and refs/main follows.
  CHECK(lrhost::io::install_into_hub_cache(asset, "lrhost/smolvla_tiny_vlm") == snapshot);
  const fs::path changed = scratch.path / "changed";
  fs::create_directories(changed);
  std::ofstream(changed / "config.json") << "{}";
  const fs::path other = lrhost::io::install_into_hub_cache(changed, "lrhost/smolvla_tiny_vlm");
  CHECK(other != snapshot);
  CHECK(lrhost::io::read_text_file(repo / "refs" / "main") == other.filename().string());
  for (const auto& entry : fs::directory_iterator(repo / "snapshots"))  // no half-assembled copy left
    CHECK(entry.path().filename().string().rfind(".tmp-", 0) == std::string::npos);
  // A cache that cannot be written costs only LeRobot's lookup: lrhost still resolves the asset.
  fs::create_directories(scratch.path / "readonly");
  std::ofstream(scratch.path / "readonly" / "hub") << "a file, not a folder";
  ScopedEnv unwritable("HF_HUB_CACHE", (scratch.path / "readonly" / "hub").string());
  CHECK(resolve_model_dir("lrhost/smolvla_tiny_vlm", "vlm_model_name") == asset);
}
