// The policy interface every model type implements (mlp, act, diffusion): a LibTorch module that maps
// a normalized batch (named tensors) to a training loss plus named outputs, predicts actions, says how
// its parameters split into optimizer groups, which optimizer/scheduler LeRobot presets it has, and
// which module types are its FSDP wrap units. Normalization itself lives in the processors the
// policy carries (host/policy/processors.hpp), saved next to the weights as LeRobot does.
#pragma once
#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "host/nn/autocast.hpp"
#include "host/optim/param_group.hpp"
#include "host/policy/policy_features.hpp"

namespace lrhost::data {
struct DatasetMeta;
}

namespace lrhost::policy {

// A batch as the loader delivers it: feature name -> tensor with a leading batch dimension.
using Batch = std::map<std::string, torch::Tensor>;

struct PolicyOutput {
  torch::Tensor loss;                          // scalar, the training objective
  std::map<std::string, torch::Tensor> parts;  // loss parts and predictions, for logging
};

using optim::ParamGroup;

class PolicyProcessors;
struct LoraAdapters;

// How a policy's preprocessor turns task strings into language tokens (LeRobot's
// TokenizerProcessorStep): the tokenizer (name as config.json says it, and its resolved folder),
// max_length and padding ("longest" | "max_length"); padding on the right, truncation on.
struct LanguageSettings {
  std::string tokenizer_name;
  std::filesystem::path tokenizer_dir;
  int64_t max_length = 48;
  std::string padding = "longest";
};

// What a training loop tells a policy before it trains (Policy::prepare_training): the facts about
// the run that a policy may keep training-time state for, without the loop knowing which policy
// keeps what (a cache of frozen features, say).
struct TrainingContext {
  // The run's folder for files reused across epochs, ranks and resumes (<output_dir>/cache).
  std::filesystem::path cache_dir;
  int64_t num_frames = 0;     // frames of the training dataset: the range of a batch's `index`
  std::string dataset_id;     // names the dataset in what the policy keeps (its root folder)
  bool augmentation = false;  // image transforms are on: a frame's pixels differ every epoch

  // What the training dataset says of itself (data::FrameSource::frame_index_count and identity).
  struct DatasetFacts {
    int64_t num_frames = 0;
    std::string id;
  };
  // A recipe's table {cache_dir =, augmentation =, num_frames =, dataset_id =} (the `dataset` key,
  // read by the caller, gives `from_dataset`; num_frames and dataset_id, when given, win over it).
  // Types are checked, unknown keys are ConfigErrors naming `where`.
  static TrainingContext read(const nlohmann::json& options, const std::optional<DatasetFacts>& from_dataset,
                              const std::string& where);
};

// Set by FSDP while the policy's parameters hold shards: state_dict() then returns the gathered
// full tensors (a collective: every rank must call it) and num_parameters() the unsharded count.
class ShardedStateSource {
 public:
  virtual ~ShardedStateSource() = default;
  virtual std::vector<std::pair<std::string, torch::Tensor>> full_state_dict() = 0;
  virtual int64_t num_parameters() const = 0;
};

class Policy : public torch::nn::Module {
 public:
  // The training forward as recipes call it: forward() under the autocast its accelerator chose,
  // with the loss returned in fp32.
  PolicyOutput run(const Batch& batch);
  // select_action / predict_action_chunk as recipes call them: without autograd (LeRobot's are
  // torch.no_grad) and between the policy's forward hooks (FSDP gathers the root unit).
  torch::Tensor run_select_action(const Batch& batch);
  torch::Tensor run_predict_action_chunk(const Batch& batch);
  void set_autocast(std::optional<nn::AutocastSpec> spec) { autocast_ = spec; }

  virtual PolicyOutput forward(const Batch& batch) = 0;
  // The next action (B, action_dim) for normalized observations, LeRobot's select_action: chunking
  // policies pop from an action queue that predict_action_chunk refills. The default says loudly
  // that the policy has none.
  virtual torch::Tensor select_action(const Batch& batch);
  // The whole predicted chunk (B, K, action_dim) for normalized observations, as LeRobot returns it
  // (ACT: K = chunk_size; Diffusion: K = n_action_steps).
  virtual torch::Tensor predict_action_chunk(const Batch& batch);
  // Clears per-episode inference state (action and observation queues); call at episode start.
  virtual void reset() {}
  // Registry name, e.g. "mlp"; the "type" of config.json.
  virtual std::string type() const = 0;
  // The resolved config (every field, defaults filled in) in LeRobot's field order, as config.json.
  virtual nlohmann::ordered_json config() const = 0;
  // config() plus lrhost's own fields that config.json cannot hold but building needs (pi0/pi05's
  // geometry when it is not LeRobot's, and the tokenizer its processors use): what Policy:config() gives a recipe, so
  // that lr.policy.new(policy:config()) builds this policy again, not LeRobot's full-size one.
  virtual nlohmann::ordered_json rebuild_config() const { return config(); }
  // Optimizer groups; the default is one group holding every trainable parameter.
  virtual std::vector<ParamGroup> param_groups() const;
  // LeRobot's training preset: {"type": "adamw"|"adam", "lr", "weight_decay", "betas", "eps",
  // "grad_clip_norm"} and the scheduler ({"type", "warmup_steps", ...} as optim::ScheduleSpec reads
  // it, or null for none). The defaults are AdamW(1e-3) and no scheduler.
  virtual nlohmann::ordered_json optimizer_preset() const;
  virtual nlohmann::ordered_json scheduler_preset() const { return nullptr; }
  // Feature type -> normalization mode ("VISUAL" -> "MEAN_STD", ...); empty when the policy
  // normalizes nothing.
  virtual std::map<std::string, std::string> normalization_mapping() const { return {}; }
  // The features the policy was built for (empty for a policy built from dims alone).
  virtual PolicyFeatures features() const { return {}; }
  // LeRobot's observation_delta_indices / action_delta_indices resolved per feature key: the frame
  // offsets each input and output needs (e.g. ACT: action -> 0..chunk_size-1); features absent
  // need only the current frame. Recipes turn these into the loader's delta_timestamps (offset/fps).
  virtual std::map<std::string, std::vector<int64_t>> delta_indices() const { return {}; }
  // Module type names (LeRobot's Python class names, e.g. "ACTEncoderLayer") whose instances are
  // FSDP wrap units: its spec's (policy_spec.hpp); empty for a type without a spec.
  virtual std::vector<std::string> fsdp_wrap_module_types() const;
  // The group of FSDP units gathered at the same time as the unit at `unit_path` (its name; the
  // memory plan's peak counts a group's units together): its spec's fsdp_gather_group, else the unit
  // alone. A policy whose pairing depends on its config (SmolVLA's expert layers) answers itself.
  virtual std::string fsdp_gather_group(const std::string& unit_path) const;
  // Why this policy's training step cannot be captured in a CUDA graph (accelerator.cuda_graph),
  // which replays the same kernels with the same arguments every step; nullopt when it can (its
  // training forward draws random numbers on the device, reads nothing back to the host and keeps
  // its shapes for a given batch signature).
  virtual std::optional<std::string> cuda_graph_blocker() const { return std::nullopt; }
  // A batch of `batch_size` zero samples in the shapes its forward takes, for the memory plan's activation
  // probe (activation_probe.hpp), when they are not the features' own (GR00T's processed prompt, pixels
  // and padded action); nullopt: the probe builds one from the features.
  virtual std::optional<Batch> example_batch(int64_t batch_size) const {
    (void)batch_size;
    return std::nullopt;
  }
  // How the policy casts its own computation whatever the accelerator's mixed_precision says (GR00T's
  // use_bf16: bf16 autocast inside its forward and sampling, as LeRobot's GrootPolicy), for the startup
  // precision line; nullopt when it leaves that to the accelerator.
  virtual std::optional<std::string> own_autocast() const { return std::nullopt; }
  // Set for policies fed with language: their processors tokenize the task.
  virtual std::optional<LanguageSettings> language_settings() const { return std::nullopt; }
  // Loads weights that a new policy takes from elsewhere than its own model.safetensors (a VLA with
  // load_vlm_weights: the VLM's checkpoint). Called by lr.policy.new, never when a pretrained policy
  // folder is loaded (its file holds every weight).
  virtual void load_pretrained_parts() {}
  // Rewrites a pretrained file's tensors (key -> tensor, views of the file) into this policy's layout
  // when the file uses another layout the policy knows (pi0/pi05: openpi's), before the strict key
  // check; returns one line per change, which the loader logs. The default changes nothing.
  virtual std::vector<std::string> adapt_pretrained_tensors(
      std::vector<std::pair<std::string, torch::Tensor>>& tensors) const {
    (void)tensors;
    return {};
  }
  // The saving twin: renames the state dict's entries (key -> tensor) into the layout LeRobot's
  // model.safetensors has where it differs from the module tree (GR00T's tied embedding, stored
  // under lm_head's name), before save_pretrained writes them. The default changes nothing.
  virtual void adapt_saved_tensors(std::vector<std::pair<std::string, torch::Tensor>>& tensors) const { (void)tensors; }
  // Files save_pretrained writes next to config.json (name -> content) for what LeRobot's config.json
  // cannot say (pi0/pi05's geometry.json for a geometry other than LeRobot's); none by default.
  virtual std::vector<std::pair<std::string, std::string>> pretrained_extra_files() const { return {}; }
  // Capabilities a training loop uses without naming the policy type. prepare_training: called once
  // before acc:prepare (FSDP has not sharded the weights yet), so a policy can set up what it keeps
  // for training from the run's facts; the default keeps nothing. training_metrics: the policy's own
  // figures for the loop's log lines (name -> value, the same names on every rank); empty by default.
  virtual void prepare_training(const TrainingContext& context) { (void)context; }
  virtual std::map<std::string, double> training_metrics() const { return {}; }
  // Matmul and convolution FLOPs of training on one sample (forward, backward, recompute; counted as
  // training_flops.hpp says), from the policy's geometry and config: the step line's tflops and mfu.
  // nullopt: not counted for this type (the step line then shows neither).
  virtual std::optional<double> training_flops_per_sample() const { return std::nullopt; }
  // Whether the policy honours the per-sample masks of a mixture (host/data/mixture/padded_dimensions.hpp):
  // a camera some datasets lack fed as an empty one, padded state/action dimensions zero and out of the
  // loss. A policy that does not refuses such a mixture (check_mixture_fits).
  virtual bool honours_mixture_masks() const { return false; }

  // Parameters then buffers by dotted name, the keys of LeRobot's state_dict / model.safetensors.
  // Under FSDP, full tensors gathered from every rank (all ranks must call it together).
  std::vector<std::pair<std::string, torch::Tensor>> state_dict() const;
  void set_sharded_state_source(ShardedStateSource* source) { sharded_ = source; }
  // The parameters view a memory-mapped checkpoint (ckpt::WeightLoading::file_backed): every rank holds
  // the same values without a broadcast, and FSDP copies out only its own rows.
  void set_weights_file_backed(bool on) { weights_file_backed_ = on; }
  bool weights_file_backed() const { return weights_file_backed_; }
  // File-backed weights stored in another dtype than the parameter's (fine-tuning with another
  // policy.dtype, cast as LeRobot's from_pretrained does): the parameter stays released
  // (nn/deferred_init.hpp) and the file's tensor stands for its values until they are copied out,
  // cast, one tensor at a time: by FSDP, each rank only its rows (take_file_cast), otherwise by
  // materialize_file_casts(), which acc:prepare, run*() and state_dict() see to.
  void add_file_cast(const torch::Tensor& param, torch::Tensor file_tensor);
  // The file tensor standing for `param` (undefined when none), no longer pending afterwards.
  torch::Tensor take_file_cast(const torch::Tensor& param);
  void materialize_file_casts();
  bool is_sharded() const { return sharded_ != nullptr; }

  // Normalization of inputs and unnormalization of actions, set from dataset stats or loaded
  // with the pretrained directory; null until then.
  void set_processors(std::shared_ptr<const PolicyProcessors> processors) { processors_ = std::move(processors); }
  const std::shared_ptr<const PolicyProcessors>& processors() const { return processors_; }

  std::vector<torch::Tensor> trainable_parameters() const;
  int64_t num_parameters() const;

  // The LoRA adapters attached by add_lora_adapters (peft/lora_adapters.hpp), or null.
  const LoraAdapters* lora_adapters() const { return lora_.get(); }
  void set_lora_adapters(std::shared_ptr<const LoraAdapters> adapters) { lora_ = std::move(adapters); }

 private:
  std::optional<nn::AutocastSpec> inference_autocast() const;

  std::optional<nn::AutocastSpec> autocast_;
  std::shared_ptr<const PolicyProcessors> processors_;
  std::shared_ptr<const LoraAdapters> lora_;
  ShardedStateSource* sharded_ = nullptr;
  bool weights_file_backed_ = false;
  // add_file_cast's pending parameters: parameter -> (the parameter, the file's tensor).
  std::map<const c10::TensorImpl*, std::pair<torch::Tensor, torch::Tensor>> file_casts_;
};

// A module's type name without namespace and the LibTorch "Impl" suffix, e.g. "ACTEncoderLayer" for
// lrhost::policy::ACTEncoderLayerImpl; FSDP matches these against fsdp_wrap_module_types().
std::string module_type_name(const torch::nn::Module& module);

// Looks up a batch entry, failing with the policy name and the keys that are present.
const torch::Tensor& require_input(const Batch& batch, const std::string& key, const std::string& policy_type);

}  // namespace lrhost::policy
