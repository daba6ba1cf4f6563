// Fuzz target: a pretrained folder's config.json as fine-tuning and `lrhost show` read it
// (ckpt::build_inputs: the config object, geometry.json, the input/output feature lists, the command
// line's changes checked against it, empty features filled from a fixed dataset's) up to the table the
// policy type builds from. Building the model itself is left out: LeRobot's default pi05 is 4 B
// parameters, far too slow for a fuzzing execution.
#include "host/ckpt/pretrained_dir.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace lrhost;
  const auto& dir = fuzz::scratch();
  fuzz::write_bytes(dir / ckpt::kConfigFile, data, size);
  // The dataset a fine-tuning run would take empty features from: one camera, a state, an action.
  const ckpt::DatasetFeatures dataset = [] {
    policy::PolicyFeatures features;
    features.inputs = {{"observation.images.top", "VISUAL", {3, 32, 32}}, {"observation.state", "STATE", {6}}};
    features.outputs = {{"action", "ACTION", {6}}};
    return features;
  };
  fuzz::expect_clean([&] { (void)ckpt::build_inputs(dir, nlohmann::json::object(), dataset); });
  return 0;
}
