// lrhost's side of the pi0/pi05 processor interop (pi_processors_interop.py): loads a processor folder
// LeRobot saved, saves it back into another folder (for LeRobot's from_pretrained), and runs the
// preprocessor and the postprocessor on a batch, writing what they produce.
//
//   lrhost_pi_processors_check IN_DIR OUT_DIR BATCH.safetensors TASKS.json RESULT_PREFIX
//
// RESULT_PREFIX.safetensors: the preprocessed batch (state, action, tokens, attention mask as uint8)
// and the unnormalized action; RESULT_PREFIX.json: pi05's prompt strings (empty list for pi0).
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "host/io/atomic_dir.hpp"
#include "host/io/safetensors.hpp"
#include "host/policy/processors.hpp"
#include "host/policy/state_prompt.hpp"
#include "host/util/error.hpp"

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  using namespace lrhost;
  if (argc != 6) {
    std::cerr << "usage: lrhost_pi_processors_check IN_DIR OUT_DIR BATCH.safetensors TASKS.json RESULT_PREFIX\n";
    return 2;
  }
  try {
    auto processors = policy::PolicyProcessors::load(argv[1]);
    fs::create_directories(argv[2]);
    processors.save(argv[2]);
    policy::Batch batch;
    for (const auto& [name, tensor] : io::read_safetensors(argv[3]).tensors) batch[name] = tensor;
    auto tasks = io::read_json_file(argv[4], {}).get<std::vector<std::string>>();
    auto out = processors.normalize(batch, tasks);
    std::vector<std::pair<std::string, torch::Tensor>> result;
    for (const char* key : {"observation.state", "action", "observation.language.tokens"})
      result.emplace_back(key, out.at(key));
    result.emplace_back("observation.language.attention_mask",
                        out.at("observation.language.attention_mask").to(torch::kUInt8));
    result.emplace_back("unnormalized_action", processors.unnormalize(out.at("action")));
    const std::string prefix = argv[5];
    io::write_safetensors(prefix + ".safetensors", result);
    nlohmann::json prompts = nlohmann::json::array();
    if (policy::ProcessorPipeline::index_of(processors.pipeline().pre, policy::ProcessorStepKind::state_prompt))
      prompts = policy::state_prompts(tasks, out.at("observation.state"));
    io::write_file_atomic(prefix + ".json", prompts.dump());
  } catch (const std::exception& error) {
    std::cerr << util::describe(error) << "\n";
    return 1;
  }
  return 0;
}
