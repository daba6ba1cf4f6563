// Unit tests of host/util: edit distance, nearest-name suggestions, dtype/device names, errors.
#include <doctest/doctest.h>

#include "host/util/env_switch.hpp"
#include "host/util/error.hpp"
#include "host/util/strings.hpp"
#include "host/util/torch_names.hpp"

using namespace lrhost::util;

TEST_CASE("edit_distance") {
  CHECK(edit_distance("", "") == 0);
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(edit_distance("lr", "lrr") == 1);
  CHECK(edit_distance("abc", "") == 3);
}

TEST_CASE("nearest returns close candidates, nearest first") {
  std::vector<std::string> keys{"optimizer.lr", "optimizer.weight_decay", "steps", "batch_size"};
  CHECK(nearest("optimizer.lrr", keys) == std::vector<std::string>{"optimizer.lr"});
  CHECK(nearest("step", keys).front() == "steps");
  CHECK(nearest("zzzzzzzzzz", keys).empty());
  CHECK(quoted_list({"a", "b"}) == "'a', 'b'");
}

TEST_CASE("human_bytes: bytes as they are, then one decimal of the largest power of 1024 under the size") {
  CHECK(human_bytes(0) == "0 B");
  CHECK(human_bytes(1023) == "1023 B");
  CHECK(human_bytes(1024) == "1.0 KiB");
  CHECK(human_bytes(1536) == "1.5 KiB");
  CHECK(human_bytes(5ull << 30) == "5.0 GiB");
  CHECK(human_bytes(3ull << 50) == "3072.0 TiB");  // TiB is the largest unit
}

TEST_CASE("parse_memory_size: powers of 1024 for GiB/G, of 1000 for GB, bare numbers are bytes") {
  CHECK(parse_memory_size("24GiB", "x") == (int64_t{24} << 30));
  CHECK(parse_memory_size("24 gib", "x") == (int64_t{24} << 30));
  CHECK(parse_memory_size("80G", "x") == (int64_t{80} << 30));
  CHECK(parse_memory_size("80GB", "x") == 80'000'000'000);
  CHECK(parse_memory_size("1.5MiB", "x") == 1572864);
  CHECK(parse_memory_size("4096", "x") == 4096);
  for (const char* bad : {"", "GiB", "24Gx", "-1GiB", "0"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(parse_memory_size(bad, "show --gpu-memory"),
                         doctest::Contains("show --gpu-memory: expected a size"), ConfigError);
  }
}

TEST_CASE("dtype and device names") {
  CHECK((parse_dtype("float32") == c10::kFloat));  // (( )): doctest cannot print ScalarType
  CHECK((parse_dtype("bfloat16") == c10::kBFloat16));
  CHECK(dtype_name(c10::kLong) == "int64");
  for (const auto& name : dtype_names()) CHECK((parse_dtype(dtype_name(parse_dtype(name))) == parse_dtype(name)));
  CHECK_THROWS_WITH_AS(parse_dtype("float33"), "unknown dtype 'float33'", ConfigError);
  CHECK(parse_device("cpu").is_cpu());
  CHECK_THROWS_AS(parse_device("tpu"), ConfigError);
  CHECK_THROWS_AS(parse_device("cuda:x"), ConfigError);
}

TEST_CASE("describe adds the hint") {
  CHECK(describe(ConfigError("bad", "fix it")) == "bad\n  hint: fix it");
  CHECK(describe(std::runtime_error("plain")) == "plain");
}

TEST_CASE("EnvSwitch: on unless its variable is \"0\" at construction; set returns the previous setting") {
  const char* name = "LRHOST_TEST_ENV_SWITCH";
  ::unsetenv(name);
  CHECK(EnvSwitch(name).enabled());
  ::setenv(name, "1", 1);
  CHECK(EnvSwitch(name).enabled());
  ::setenv(name, "", 1);
  CHECK(EnvSwitch(name).enabled());
  ::setenv(name, "0", 1);
  EnvSwitch off(name);
  ::unsetenv(name);
  CHECK_FALSE(off.enabled());  // read once, at construction
  CHECK_FALSE(off.set(true));
  CHECK(off.enabled());
  CHECK(off.set(false));
  CHECK_FALSE(off.enabled());
}
