// rename_map: a key that matches nothing in the batch is an error listing the batch's keys (with the
// reversed entry when the user mapped policy key -> dataset key); suggestions are command-line JSON
// that maps the dataset's key, also behind a rename the user already made.
#include <doctest/doctest.h>
#include <torch/torch.h>

#include "host/policy/rename_map.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

using lrhost::policy::Batch;
using lrhost::policy::check_rename_map_keys;
using lrhost::policy::suggested_rename_map;
using lrhost::test::contains;
using lrhost::test::error_of;
using lrhost::util::ConfigError;

namespace {
Batch dataset_batch() {
  return {{"observation.images.top", torch::zeros({1})},
          {"observation.state", torch::zeros({1})},
          {"action", torch::zeros({1})}};
}
}  // namespace

TEST_CASE("rename_map: every key must be in the batch") {
  CHECK_NOTHROW(check_rename_map_keys({{"observation.images.top", "observation.images.camera1"}}, dataset_batch()));
  CHECK_NOTHROW(check_rename_map_keys({}, dataset_batch()));

  auto typo = error_of<ConfigError>([] {
    check_rename_map_keys({{"observation.images.tpo", "observation.images.camera1"}}, dataset_batch());
  });
  CHECK(contains(typo,
                 "rename_map: key 'observation.images.tpo' (-> 'observation.images.camera1') matches no key of "
                 "the batch, whose keys are 'action', 'observation.images.top', 'observation.state'"));
  CHECK(contains(typo, "{\"dataset key\": \"policy key\"}"));

  // Policy key -> dataset key, the wrong way round: the hint gives the entry reversed, as JSON.
  auto reversed = error_of<ConfigError>([] {
    check_rename_map_keys({{"observation.images.camera1", "observation.images.top"}}, dataset_batch());
  });
  CHECK(contains(reversed, "'observation.images.top' is in the batch: the entry looks reversed"));
  CHECK(contains(reversed,
                 "rename_map='{\"observation.images.top\": \"observation.images.camera1\"}' "
                 "(lerobot-train: --rename_map='{\"observation.images.top\": \"observation.images.camera1\"}')"));
}

TEST_CASE("rename_map: a suggestion maps the dataset key onto the policy's, in command-line JSON") {
  CHECK(suggested_rename_map({}, "observation.images.top", "observation.images.camera1") ==
        "rename_map='{\"observation.images.top\": \"observation.images.camera1\"}' "
        "(lerobot-train: --rename_map='{\"observation.images.top\": \"observation.images.camera1\"}')");
  // The batch key came from the user's own rename (top -> wrist): the suggestion replaces that entry
  // with the dataset key mapped onto the policy's camera, and keeps the user's other entries.
  auto text = suggested_rename_map({{"observation.images.top", "observation.images.wrist"}, {"a", "b"}},
                                   "observation.images.wrist", "observation.images.camera1");
  CHECK(contains(text, "rename_map='{\"a\": \"b\", \"observation.images.top\": \"observation.images.camera1\"}'"));
  CHECK_FALSE(contains(text, "wrist"));
}
