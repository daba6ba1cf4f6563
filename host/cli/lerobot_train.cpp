// lerobot-train's command line mapped onto a shipped recipe; see lerobot_train.hpp.
#include "host/cli/lerobot_train.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <ctime>
#include <limits>
#include <map>
#include <string_view>

#include "host/ckpt/pretrained_dir.hpp"
#include "host/cli/accelerate_config.hpp"
#include "host/cli/lerobot_requeue.hpp"
#include "host/config/overrides.hpp"
#include "host/policy/policy_defaults.hpp"
#include "host/policy/registry.hpp"
#include "host/util/error.hpp"
#include "host/util/shipped_paths.hpp"
#include "host/util/strings.hpp"

namespace lrhost::cli {
namespace fs = std::filesystem;
using util::ConfigError;

namespace {

enum class Kind {
  config,   // --flag=v becomes `target=v` (lr.config checks the value against the recipe)
  prefix,   // --policy.X=v becomes `policy.X=v`: every field of the recipe's policy table
  special,  // needs more than a rename: handled by name in plan_lerobot_train
  note,     // accepted; has no counterpart in lrhost, says what happens instead
  refuse,   // cannot be honoured: an error saying why
};

struct FlagRule {
  std::string_view flag;  // "--batch_size"; a rule ending in '.' matches every flag under it
  Kind kind;
  std::string_view target;  // the lrhost key (config, prefix)
  std::string_view why;     // the note or the reason for refusing
  // A dash-less `key=value` (LeRobot's Chinese guide writes `batch_size=16`) is this flag, unless the
  // key is also a key of lrhost's recipes with its own meaning (optimizer.*, eval.*): then it stays
  // that lrhost override.
  bool bare_is_lrhost_key = false;
};

// The one mapping table (docs/lerobot.md shows it to users). Exact flags come before the prefix
// rules that would also match them.
constexpr std::array kLeRobotFlags{
    // The policy: the recipe is the shipped one of its type.
    FlagRule{"--policy.type", Kind::special, "", "picks the shipped recipe of that policy type"},
    FlagRule{"--policy", Kind::special, "", "as --policy.type (draccus's spelling of a choice: --policy=act)"},
    FlagRule{"--policy.path", Kind::special, "policy.pretrained_path", "fine-tunes that folder or cached hub id"},
    FlagRule{"--policy.pretrained_path", Kind::special, "policy.pretrained_path", "as --policy.path"},
    FlagRule{"--policy.device", Kind::special, "", "becomes lrhost's --device (cuda or cpu)"},
    FlagRule{"--policy.use_amp", Kind::special, "",
             "true is refused: give accelerate's --mixed_precision=bf16 (accelerator.mixed_precision)"},
    FlagRule{"--policy.push_to_hub", Kind::special, "",
             "true is refused: lrhost never uploads; upload checkpoints/last/pretrained_model with `hf upload`"},
    FlagRule{"--policy.repo_id", Kind::special, "",
             "accepted with a warning: lrhost never uploads; upload afterwards with `hf upload REPO_ID "
             "<output_dir>/checkpoints/last/pretrained_model`"},
    FlagRule{"--policy.pretrained_revision", Kind::refuse, "",
             "lrhost never downloads: it reads the cached snapshot that refs/main names; pass the snapshot "
             "folder as --policy.path instead"},
    FlagRule{"--policy.", Kind::prefix, "policy.", "any field of the policy's config"},
    // The dataset.
    FlagRule{"--dataset.repo_id", Kind::config, "dataset.repo_id",
             "found in $HF_LEROBOT_HOME or ~/.cache/huggingface/lerobot; never downloaded"},
    FlagRule{"--dataset.root", Kind::config, "dataset.root", ""},
    FlagRule{"--dataset.episodes", Kind::config, "dataset.episodes",
             "the recipe holds out the last eval_episodes of them for its held-out evaluation"},
    FlagRule{"--dataset.image_transforms.", Kind::prefix, "dataset.image_transforms.",
             "LeRobot's ImageTransformsConfig: enable, max_num_transforms, random_order, tfs.NAME.weight/kwargs"},
    FlagRule{"--dataset.use_imagenet_stats", Kind::config, "dataset.use_imagenet_stats",
             "cameras normalized with ImageNet's mean/std (LeRobot's default true)"},
    FlagRule{"--dataset.video_backend", Kind::note, "", "lrhost decodes video with FFmpeg's libraries itself"},
    FlagRule{"--dataset.revision", Kind::refuse, "",
             "lrhost never downloads: it reads the dataset folder as it is on disk"},
    FlagRule{"--dataset.streaming", Kind::refuse, "", "lrhost reads datasets from a local folder, not streamed"},
    // The loop.
    FlagRule{"--batch_size", Kind::config, "batch_size", "per process, as in LeRobot"},
    FlagRule{"--steps", Kind::config, "steps", ""},
    FlagRule{"--seed", Kind::config, "seed", ""},
    FlagRule{"--tolerance_s", Kind::config, "tolerance_s", "seconds a frame's time may be off k/fps"},
    FlagRule{"--num_workers", Kind::special, "num_workers",
             "lrhost's loader workers are threads of each rank; 0 (LeRobot: the main process) becomes 1"},
    FlagRule{"--log_freq", Kind::config, "log_freq", ""},
    FlagRule{"--save_freq", Kind::special, "save_freq", "<= 0: only the final checkpoint, as in LeRobot"},
    FlagRule{"--save_checkpoint", Kind::config, "save_checkpoint", ""},
    FlagRule{"--output_dir", Kind::config, "output_dir", "also the run's log folder"},
    FlagRule{"--job_name", Kind::special, "",
             "names the output folder as LeRobot does: outputs/train/<date>/<time>_<job_name>"},
    FlagRule{"--resume", Kind::special, "", "with --config_path=.../train_config.json: `lrhost resume`"},
    FlagRule{"--config_path", Kind::special, "",
             "the train_config.json of the checkpoint to resume; only with --resume=true"},
    FlagRule{"--rename_map", Kind::config, "rename_map", "a JSON object: dataset key -> policy key"},
    FlagRule{"--prefetch_factor", Kind::note, "", "no counterpart: lrhost's loader threads decode ahead on their own"},
    FlagRule{"--persistent_workers", Kind::note, "", "no counterpart: lrhost's loader threads live for the run"},
    FlagRule{"--dataloader_multiprocessing_context", Kind::note, "",
             "no counterpart: lrhost's loader uses threads, not processes"},
    FlagRule{"--cudnn_deterministic", Kind::refuse, "",
             "not supported; accelerator.cudnn_benchmark=false turns cuDNN's autotuning off"},
    FlagRule{"--save_checkpoint_to_hub", Kind::special, "", "true is refused: lrhost never uploads"},
    // Optimizer and scheduler: LeRobot takes them from the policy's preset unless told otherwise.
    FlagRule{"--use_policy_training_preset", Kind::special, "",
             "true (LeRobot's default): the policy's optimizer and scheduler fields"},
    FlagRule{"--optimizer.", Kind::special, "policy.optimizer_",
             "with --use_policy_training_preset=false the policy's optimizer_* field; with the preset (default) "
             "ignored, as lerobot-train ignores it, with a warning",
             true},
    FlagRule{"--scheduler.", Kind::special, "policy.scheduler_",
             "with --use_policy_training_preset=false the policy's scheduler_* field; with the preset (default) "
             "ignored, as lerobot-train ignores it, with a warning"},
    // Logging and evaluation.
    FlagRule{"--wandb.enable", Kind::special, "",
             "true: metrics go to <output_dir>/tensorboard, which `wandb sync --sync-tensorboard` uploads"},
    FlagRule{"--wandb.", Kind::note, "", "lrhost writes TensorBoard files, not wandb runs"},
    FlagRule{"--env.", Kind::refuse, "",
             "lrhost has no LeRobot gym environments: evaluate with `lrhost eval RUN_DIR` (built-in task)"},
    FlagRule{"--env_eval_freq", Kind::refuse, "",
             "lrhost has no LeRobot gym environments: eval_freq=N works with the built-in task"},
    FlagRule{"--eval.", Kind::refuse, "", "lrhost has no LeRobot gym environments: see `lrhost eval`", true},
    FlagRule{"--eval_steps", Kind::refuse, "", "not supported: the recipe evaluates held-out episodes at the end"},
    FlagRule{"--ema.", Kind::special, "ema.",
             "the EMA of the weights (LeRobot main's EMAConfig, not in 0.6.1: enable, decay, update_after_step, "
             "inv_gamma, power, min_decay, max_decay, use_for_eval); also under FSDP and with LoRA"},
    FlagRule{"--peft.", Kind::special, "policy.peft.",
             "LoRA adapters (LeRobot's PeftConfig: method_type, r, lora_alpha, target_modules, "
             "full_training_modules, init_type); any of them turns LoRA on (method_type LORA), as in LeRobot"},
    // accelerate launch's options.
    FlagRule{"--config_file", Kind::special, "",
             "accelerate's config file (YAML or JSON); without it, accelerate's saved default config; each key "
             "maps as docs/lerobot.md shows, flags typed beside it win"},
    FlagRule{"--num_processes", Kind::special, "", "becomes --nproc N (one rank per GPU when there are GPUs)"},
    FlagRule{"--multi_gpu", Kind::special, "", "without --num_processes: one rank per visible GPU"},
    FlagRule{"--mixed_precision", Kind::special, "accelerator.mixed_precision", "no, bf16 or fp16"},
    FlagRule{"--num_machines", Kind::special, "",
             "1 is this machine; more: `lrhost RECIPE --nnodes N --node-rank K --master-addr HOST --master-port P` "
             "on each node (docs/multi_gpu.md#multi-node)"},
    FlagRule{"--machine_rank", Kind::special, "", "0 only (one machine); see --num_machines"},
    FlagRule{"--main_process_port", Kind::special, "", "becomes --master-port P (with several processes)"},
    FlagRule{"--dynamo_backend", Kind::special, "", "no only: lrhost has no torch.compile"},
    FlagRule{"--gpu_ids", Kind::special, "",
             "all: every visible GPU; a list (0,1): CUDA_VISIBLE_DEVICES=0,1 for the run, as accelerate sets it"},
    // lrhost's own.
    FlagRule{"--gpus", Kind::special, "", "lrhost: N ranks, one per GPU"},
    FlagRule{"--nproc", Kind::special, "", "lrhost: N rank processes"},
    FlagRule{"--device", Kind::special, "", "lrhost: auto, cpu or cuda"},
    FlagRule{"--dry-run", Kind::special, "", "lrhost: print the equivalent command, run nothing"},
    FlagRule{"--verbose", Kind::special, "", "lrhost: debug-level logging"},
    FlagRule{"--overwrite", Kind::special, "",
             "lrhost: start afresh in an output_dir that holds checkpoints (moved aside, never deleted)"},
};

// Flags that take no value (a value is still accepted as --flag=true/false).
bool is_switch(std::string_view flag) {
  return flag == "--multi_gpu" || flag == "--dry-run" || flag == "--verbose" || flag == "--resume" ||
         flag == "--overwrite";
}

const FlagRule* find_rule(std::string_view flag) {
  for (const auto& rule : kLeRobotFlags) {
    if (rule.flag.back() == '.' ? flag.starts_with(rule.flag) && flag.size() > rule.flag.size() : flag == rule.flag)
      return &rule;
  }
  return nullptr;
}

// The policy types lerobot-train's --policy.type can name here.
std::vector<std::string> lerobot_types() {
  std::vector<std::string> types;
  for (const auto* spec : policy::policy_specs())
    if (spec->lerobot_train) types.push_back(spec->type);
  return types;
}

// Where a shipped recipe's defaults differ from lerobot-train's: the recipes train small models out
// of the box (short runs, ACT re-planning every step, SmolVLA on the tiny VLM). A command line that
// does not set these gets lerobot-train's values, so it trains what LeRobot would
// (TrainPipelineConfig's loop defaults; the policy's LeRobot defaults from its config struct).
// tests/lua/lerobot_train.sh checks that no other field of the shipped recipes differs.
// eval_episodes=0: lerobot-train trains on every episode; the recipes' held-out evaluation runs only
// when the command line asks for it (eval_episodes=N).
const std::vector<std::pair<std::string, std::string>> kLeRobotLoopDefaults{
    {"steps", "100000"}, {"log_freq", "200"}, {"save_freq", "20000"}, {"num_workers", "4"}, {"eval_episodes", "0"}};

// How lerobot-train's --policy.type maps onto lrhost: the shipped recipe, the policy fields whose
// recipe defaults differ from LeRobot's, LeRobot's presets (the type's spec, policy_spec.hpp);
// ConfigError naming the types that have one.
const policy::LeRobotTrainMapping& lerobot_mapping(const std::string& type) {
  const auto* spec = policy::find_policy_spec(type);
  if (spec && spec->lerobot_train) return *spec->lerobot_train;
  throw ConfigError("lerobot-train: policy type '" + type + "' has no shipped lrhost recipe",
                    "lrhost trains " + util::quoted_list(lerobot_types()) + " from lerobot-train's flags");
}

// lerobot-train's value of a policy field that lrhost's config leaves null, if it has one.
const std::string* lerobot_value(const std::string& type, const std::string& field) {
  for (const auto& [name, value] : lerobot_mapping(type).lerobot_values)
    if (name == field) return &value;
  return nullptr;
}

struct Flag {
  std::string name;   // "--batch_size"
  std::string value;  // "4" ("true" for a bare switch)
  bool given_value = false;
};

// `$(which lerobot-train)`, or the script as LeRobot's Chinese guide launches it
// (src/lerobot/scripts/lerobot_train.py): what accelerate would run, which lrhost is.
bool is_lerobot_train_script(const std::string& argument) {
  if (argument.find('=') != std::string::npos) return false;
  return fs::path(argument).filename() == "lerobot-train" || argument.ends_with("lerobot_train.py");
}

std::vector<Flag> split_flags(const std::vector<std::string>& arguments, std::vector<std::string>& passthrough) {
  std::vector<Flag> flags;
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    std::string argument = arguments[i];
    // "$(which lerobot-train)" quoted where lerobot-train is not installed expands to "".
    if (argument.empty() || is_lerobot_train_script(argument)) continue;
    if (!argument.starts_with("-")) {
      const auto equals = argument.find('=');
      if (equals == std::string::npos || equals == 0) {
        if (argument.ends_with(".py"))
          throw ConfigError("lerobot-train: '" + argument + "' is another training script than lerobot-train",
                            "lrhost runs lerobot-train's command line on its shipped recipes and never runs Python; "
                            "write other training as a Lua recipe (docs/recipe_api.md)");
        throw ConfigError("lerobot-train: unexpected argument '" + argument + "'",
                          "flags look like --batch_size=8 (lerobot-train) and overrides like batch_size=8 (lrhost)");
      }
      // `batch_size=16`: lerobot-train's flag when the table has it, else an lrhost override.
      const FlagRule* rule = find_rule("--" + argument.substr(0, equals));
      if (rule == nullptr || rule->bare_is_lrhost_key) {
        passthrough.push_back(argument);
        continue;
      }
      argument = "--" + argument;
    } else if (!argument.starts_with("--")) {
      throw ConfigError("lerobot-train: unexpected argument '" + argument + "'",
                        "flags look like --batch_size=8 (lerobot-train) and overrides like batch_size=8 (lrhost)");
    }
    Flag flag;
    auto equals = argument.find('=');
    flag.name = argument.substr(0, equals);
    if (equals != std::string::npos) {
      flag.value = argument.substr(equals + 1);
      flag.given_value = true;
    } else if (!is_switch(flag.name) && i + 1 < arguments.size() && !arguments[i + 1].starts_with("--")) {
      flag.value = arguments[++i];  // draccus and accelerate also take `--flag value`
      flag.given_value = true;
    } else if (is_switch(flag.name)) {
      flag.value = "true";
      // `--resume true`: a switch followed by its value.
      if (i + 1 < arguments.size() && (arguments[i + 1] == "true" || arguments[i + 1] == "false")) {
        flag.value = arguments[++i];
        flag.given_value = true;
      }
    } else {
      throw ConfigError("lerobot-train: " + flag.name + " needs a value", "write " + flag.name + "=VALUE");
    }
    flags.push_back(std::move(flag));
  }
  return flags;
}

// draccus's booleans: true/false in any case, 1/0, yes/no.
bool boolean(const Flag& flag) {
  const std::string text = util::lowercase(flag.value);
  if (text == "true" || text == "1" || text == "yes") return true;
  if (text == "false" || text == "0" || text == "no") return false;
  throw ConfigError("lerobot-train: " + flag.name + " expects true or false, got '" + flag.value + "'");
}

// The flag's value as a whole number in [low, high].
int whole_number(const Flag& flag, int low, int high = std::numeric_limits<int>::max()) {
  try {
    std::size_t used = 0;
    int value = std::stoi(flag.value, &used);
    if (used == flag.value.size() && value >= low && value <= high) return value;
  } catch (const std::exception&) {
  }
  throw ConfigError("lerobot-train: " + flag.name + " expects a whole number >= " + std::to_string(low) +
                    (high == std::numeric_limits<int>::max() ? "" : " and <= " + std::to_string(high)) + ", got '" +
                    flag.value + "'");
}

int count(const Flag& flag) {
  return whole_number(flag, 1);
}

[[noreturn]] void refuse(const Flag& flag, std::string_view why) {
  throw ConfigError("lerobot-train: " + flag.name + (flag.given_value ? "=" + flag.value : "") +
                    " cannot be honoured: " + std::string(why));
}

[[noreturn]] void unknown(const Flag& flag) {
  std::vector<std::string> known;
  for (const auto& rule : kLeRobotFlags) known.emplace_back(rule.flag);
  auto suggestions = config::suggest_keys(flag.name, known);
  throw ConfigError("lerobot-train: unknown flag " + flag.name,
                    (suggestions.empty() ? std::string() : "did you mean " + util::quoted_list(suggestions) + "? ") +
                        "`lrhost lerobot-train --help` and docs/lerobot.md list the flags lrhost maps");
}

// --optimizer.X / --scheduler.X (with --use_policy_training_preset=false) as the override of the
// policy's preset field that holds X; nullopt for a type that matches the preset (nothing to set).
std::optional<std::string> optimizer_override(const Flag& flag, const std::string& type,
                                              const nlohmann::ordered_json& fields) {
  const bool optimizer = flag.name.starts_with("--optimizer.");
  const std::string field = flag.name.substr(std::string_view("--optimizer.").size());  // same length
  if (field == "type") {
    const auto& mapping = lerobot_mapping(type);
    const std::string kind = optimizer ? mapping.optimizer_preset : mapping.scheduler_preset;
    if (kind.empty()) refuse(flag, "lrhost trains " + type + " without a scheduler, as LeRobot's preset");
    if (flag.value != kind)
      refuse(flag, "lrhost trains " + type + " with its preset " + (optimizer ? "optimizer" : "scheduler") + " '" +
                       kind + "'");
    return std::nullopt;
  }
  if (optimizer && field == "grad_clip_norm") return "optimizer.grad_clip_norm=" + flag.value;
  // LeRobot's optimizer/scheduler config names -> the policy's preset fields.
  static const std::map<std::string, std::string> scheduler_names{{"num_warmup_steps", "warmup_steps"},
                                                                  {"num_decay_steps", "decay_steps"},
                                                                  {"decay_lr", "decay_lr"},
                                                                  {"name", "name"}};
  std::string target;
  if (optimizer) {
    target = "optimizer_" + field;
  } else if (auto found = scheduler_names.find(field); found != scheduler_names.end()) {
    target = "scheduler_" + found->second;
  } else if (field == "peak_lr") {
    target = "optimizer_lr";
  }
  if (target.empty() || !fields.contains(target))
    refuse(flag, "the '" + type + "' policy has no field policy." + (target.empty() ? field : target) + " for it");
  return "policy." + target + "=" + flag.value;
}

// LeRobot's PeftConfig fields (configs/default.py), each the policy.peft key it becomes.
constexpr std::array<std::string_view, 6> kPeftFields{
    "method_type", "r", "lora_alpha", "target_modules", "full_training_modules", "init_type"};

// A draccus list value, `[q_proj,v_proj]` or `["q_proj", "v_proj"]`, as a JSON list of names; a
// single name is a list of one.
nlohmann::json name_list(const Flag& flag) {
  std::string text = flag.value;
  if (!text.starts_with("[")) return nlohmann::json::array({text});
  if (!text.ends_with("]")) throw ConfigError("lerobot-train: " + flag.name + "=" + text + ": the list lacks its ']'");
  nlohmann::json names = nlohmann::json::array();
  const std::string inner = text.substr(1, text.size() - 2);
  if (inner.find_first_not_of(" \t") == std::string::npos) return names;  // []
  for (std::size_t start = 0; start <= inner.size();) {
    const auto comma = std::min(inner.find(',', start), inner.size());
    std::string item = inner.substr(start, comma - start);
    const auto first = item.find_first_not_of(" \t"), last = item.find_last_not_of(" \t");
    item = first == std::string::npos ? std::string() : item.substr(first, last - first + 1);
    if (item.size() >= 2 && (item.front() == '"' || item.front() == '\'') && item.back() == item.front())
      item = item.substr(1, item.size() - 2);
    if (item.empty()) throw ConfigError("lerobot-train: " + flag.name + "=" + text + ": an empty module name");
    names.push_back(item);
    start = comma + 1;
  }
  return names;
}

// LeRobot main's EMAConfig fields (configs/default.py), each the ema key of the same name.
constexpr std::array<std::string_view, 8> kEmaFields{"enable", "decay",     "update_after_step", "inv_gamma",
                                                     "power",  "min_decay", "max_decay",         "use_for_eval"};

// --ema.X=v as the ema override it means; --ema.decay=None (EMAConfig's default) is the table's -1.
std::string ema_override(const Flag& flag) {
  const std::string field = flag.name.substr(std::string_view("--ema.").size());
  if (std::find(kEmaFields.begin(), kEmaFields.end(), field) == kEmaFields.end())
    throw ConfigError("lerobot-train: unknown flag " + flag.name +
                          (field == "on_main_only" ? " (LeRobot's EMAConfig has no such field)" : ""),
                      field == "on_main_only" ? "lrhost has it: give ema.on_main_only=" + flag.value
                                              : "LeRobot's --ema fields: enable, decay, update_after_step, inv_gamma, "
                                                "power, min_decay, max_decay, use_for_eval");
  if (field == "decay" && (flag.value == "None" || flag.value == "null")) return "ema.decay=-1";
  return "ema." + field + "=" + flag.value;
}

// --peft.X=v as the policy.peft override it means. target_modules is PEFT's `list[str] | str`: a list
// becomes lrhost's target_module_names, a string (a regex or "all-linear") target_modules.
std::string peft_override(const Flag& flag) {
  const std::string field = flag.name.substr(std::string_view("--peft.").size());
  if (std::find(kPeftFields.begin(), kPeftFields.end(), field) == kPeftFields.end()) {
    const bool lrhost_only = field == "lora_dropout" || field == "use_rslora";
    throw ConfigError(
        "lerobot-train: unknown flag " + flag.name + (lrhost_only ? " (LeRobot's PeftConfig has no such field)" : ""),
        lrhost_only ? "lrhost has it: give policy.peft." + field + "=" + flag.value
                    : "LeRobot's --peft fields: method_type, r, lora_alpha, target_modules, "
                      "full_training_modules, init_type");
  }
  if (field == "target_modules" && flag.value.starts_with("["))
    return "policy.peft.target_module_names=" + name_list(flag).dump();
  if (field == "full_training_modules") return "policy.peft.full_training_modules=" + name_list(flag).dump();
  return "policy.peft." + field + "=" + flag.value;
}

// LeRobot's default output folder: outputs/train/<date>/<time>_<job_name>.
std::string lerobot_output_dir(const std::string& job_name) {
  std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm local{};
  localtime_r(&now, &local);
  char date[16], time[16];
  std::strftime(date, sizeof date, "%Y-%m-%d", &local);
  std::strftime(time, sizeof time, "%H-%M-%S", &local);
  return std::string("outputs/train/") + date + "/" + time + "_" + job_name;
}

// The path as the user would type it: relative to the working directory when below it.
std::string display_path(const fs::path& path) {
  std::error_code ec;
  auto relative = fs::relative(path, fs::current_path(ec), ec);
  if (!ec && !relative.empty() && *relative.begin() != "..") return relative.string();
  return path.string();
}

}  // namespace

std::string LeRobotTrainPlan::equivalent_command() const {
  std::string line = "lrhost ";
  if (cuda_visible_devices) line = "CUDA_VISIBLE_DEVICES=" + *cuda_visible_devices + " " + line;
  line += resume_from ? "resume " + util::shell_quoted(display_path(*resume_from))
                      : util::shell_quoted(display_path(recipe));
  if (gpus) line += " --gpus " + std::to_string(*gpus);
  if (nproc) line += " --nproc " + std::to_string(*nproc);
  if (device != "auto") line += " --device " + device;
  if (master_port) line += " --master-port " + std::to_string(*master_port);
  if (run_dir && !resume_from) line += " --run-dir " + util::shell_quoted(*run_dir);
  if (verbose) line += " --verbose";
  if (overwrite) line += " --overwrite";
  for (const auto& override : overrides) line += " " + util::shell_quoted(override);
  return line;
}

// Applies accelerate's config file below the flags typed beside it (accelerate_config.hpp).
void apply_accelerate_config(LeRobotTrainPlan& plan, const fs::path& file, bool from_flag, const std::string& type,
                             const std::vector<Flag>& flags, const std::vector<std::string>& passthrough) {
  AccelerateConfigContext context;
  context.policy = type.empty() ? nullptr : policy::find_policy_spec(type);
  for (const auto& flag : flags) {
    const std::string typed = flag.name + (flag.given_value ? "=" + flag.value : "");
    if (flag.name == "--num_processes" || flag.name == "--nproc" || flag.name == "--gpus")
      context.typed["nproc"] = typed;
    if (flag.name == "--device" || flag.name == "--policy.device") context.typed["device"] = typed;
    if (flag.name == "--gpu_ids") context.typed["gpu_ids"] = typed;
  }
  std::vector<std::string> overrides = plan.overrides;
  overrides.insert(overrides.end(), passthrough.begin(), passthrough.end());
  for (const auto& override : overrides) context.typed.emplace(override.substr(0, override.find('=')), override);
  auto mapping = map_accelerate_config(file, context);
  plan.accelerate_config.push_back("accelerate config " + file.string() +
                                   (from_flag ? " (--config_file)" : " (accelerate's saved default config)") + ":");
  for (const auto& line : mapping.lines) plan.accelerate_config.push_back("  " + line);
  if (mapping.num_processes) plan.nproc = mapping.num_processes;
  if (mapping.device) plan.device = *mapping.device;
  if (mapping.cuda_visible_devices) plan.cuda_visible_devices = mapping.cuda_visible_devices;
  plan.overrides.insert(plan.overrides.end(), mapping.overrides.begin(), mapping.overrides.end());
}

LeRobotTrainPlan plan_lerobot_train(const std::vector<std::string>& arguments,
                                    const std::optional<fs::path>& default_config) {
  LeRobotTrainPlan plan;
  std::vector<std::string> passthrough;
  const auto flags = split_flags(arguments, passthrough);

  // First pass: what decides the recipe and how the other flags read.
  std::string type, pretrained, job_name, output_dir, config_path, config_file;
  bool pretrained_bf16 = false;  // the pretrained folder's config.json says dtype = "bfloat16"
  bool preset = true, resume = false, push_to_hub_off = false;
  bool peft_given = false, peft_method_given = false;  // a --peft.* flag; --peft.method_type among them
  std::vector<std::string> repo_ids;
  for (const auto& flag : flags) {
    if (flag.name == "--policy.type" || flag.name == "--policy") {
      if (!type.empty() && type != flag.value)
        throw ConfigError("lerobot-train: the policy type is given twice: '" + type + "' and " + flag.name + "=" +
                          flag.value);
      type = flag.value;
    }
    if (flag.name == "--policy.path" || flag.name == "--policy.pretrained_path") pretrained = flag.value;
    if (flag.name == "--use_policy_training_preset") preset = boolean(flag);
    if (flag.name == "--resume") resume = boolean(flag);
    if (flag.name == "--config_path") config_path = flag.value;
    if (flag.name == "--config_file") config_file = flag.value;
    if (flag.name == "--policy.push_to_hub") push_to_hub_off = !boolean(flag);
    if (flag.name == "--job_name") job_name = flag.value;
    if (flag.name == "--output_dir") output_dir = flag.value;
  }

  if (resume) {
    if (config_path.empty())
      throw ConfigError(
          "lerobot-train: --resume=true needs --config_path=<run>/checkpoints/last/pretrained_model/"
          "train_config.json, as in LeRobot",
          "or run `lrhost resume <run folder>`");
    if (!pretrained.empty())
      throw ConfigError("lerobot-train: --resume=true takes the policy from --config_path; drop --policy.path",
                        "LeRobot refuses the two together too");
    fs::path file = config_path;
    std::error_code ec;
    if (fs::is_directory(file, ec)) file /= "train_config.json";
    if (!fs::is_regular_file(file, ec))
      throw ConfigError("lerobot-train: --config_path=" + config_path + ": no such file",
                        "give the train_config.json of the checkpoint to resume, "
                        "e.g. outputs/train/RUN/checkpoints/last/pretrained_model/train_config.json");
    // <run>/checkpoints/<step>/pretrained_model/train_config.json -> <run>/checkpoints/<step>
    plan.resume_from = fs::absolute(file).lexically_normal().parent_path().parent_path();
  } else if (!config_path.empty()) {
    // lerobot-train would read the whole run's settings from that file and take the flags on top.
    throw ConfigError("lerobot-train: --config_path=" + config_path +
                          " without --resume=true: lrhost does not start a new run from a train config file",
                      "give its settings as flags (--policy.type=..., --dataset.repo_id=..., --batch_size=...); "
                      "to fine-tune the policy that file sits beside, give its folder as --policy.path=DIR; to "
                      "continue that run, add --resume=true");
  } else {
    if (!pretrained.empty()) {
      auto config = policy::read_config_json(policy::resolve_pretrained_dir(pretrained));
      std::string folder_type = config.value("type", std::string());
      if (!type.empty() && type != folder_type)
        throw ConfigError("lerobot-train: --policy.type=" + type + " but --policy.path=" + pretrained + " is a '" +
                              folder_type + "' policy",
                          "drop --policy.type: the folder's config.json names the type");
      type = folder_type;
      pretrained_bf16 = config.value("dtype", std::string()) == "bfloat16";
    }
    if (type.empty())
      throw ConfigError("lerobot-train: give the policy: --policy.type=TYPE (from scratch; one of " +
                        util::quoted_list(lerobot_types()) +
                        ") or --policy.path=DIR (fine-tune a pretrained folder or cached hub id)");
    plan.recipe = (util::shipped_recipes_dir() / lerobot_mapping(type).recipe).lexically_normal().string();
    if (!pretrained.empty()) plan.overrides.push_back("policy.pretrained_path=" + pretrained);
    // A fresh run, as lerobot-train's: an output folder with checkpoints is refused, not resumed.
    plan.overrides.push_back("resume=false");
    if (!output_dir.empty() && !job_name.empty())
      plan.notes.push_back("--job_name=" + job_name +
                           ": names only the default output folder (and a wandb run) "
                           "in LeRobot; --output_dir gives the folder here");
    if (output_dir.empty()) {
      output_dir = lerobot_output_dir(job_name.empty() ? type : job_name);
      plan.overrides.push_back("output_dir=" + output_dir);
    }
    plan.run_dir = output_dir;
  }

  const auto fields = type.empty() ? nlohmann::ordered_json::object() : policy::default_policy_config(type);
  const auto all_fields =
      type.empty() ? nlohmann::ordered_json::object() : policy::default_policy_config_with_nulls(type);
  for (const auto& flag : flags) {
    const FlagRule* rule = find_rule(flag.name);
    if (rule == nullptr) unknown(flag);
    const std::string name = flag.name;
    switch (rule->kind) {
      case Kind::config:
        plan.overrides.push_back(std::string(rule->target) + "=" + flag.value);
        break;
      case Kind::prefix:
        // `--policy.temporal_ensemble_coeff=null`: a field already null by default has nothing to set
        // (the recipe's policy table cannot hold null), unless lerobot-train's default is a value
        // (lerobot_values: the recipe holds the field as text, which reads null as null).
        if ((flag.value == "null" || flag.value == "None") && all_fields.contains(name.substr(rule->flag.size())) &&
            all_fields[name.substr(rule->flag.size())].is_null() &&
            !lerobot_value(type, name.substr(rule->flag.size())))
          break;
        plan.overrides.push_back(std::string(rule->target) + name.substr(rule->flag.size()) + "=" + flag.value);
        break;
      case Kind::note:
        plan.notes.push_back(name + ": " + std::string(rule->why));
        break;
      case Kind::refuse:
        if (flag.value == "false" || flag.value == "0") break;  // turning off what lrhost lacks is fine
        refuse(flag, rule->why);
      case Kind::special:
        if (name == "--policy.device") {
          if (flag.value != "cuda" && flag.value != "cpu" && !flag.value.starts_with("cuda:"))
            throw ConfigError("lerobot-train: --policy.device expects cuda or cpu, got '" + flag.value + "'");
          plan.device = flag.value == "cpu" ? "cpu" : "cuda";
        } else if (name == "--policy.use_amp" || name == "--policy.push_to_hub" || name == "--save_checkpoint_to_hub") {
          if (boolean(flag)) refuse(flag, rule->why);
          // Recorded in config.json as LeRobot records it.
          if (name != "--save_checkpoint_to_hub") plan.overrides.push_back(name.substr(2) + "=false");
        } else if (name == "--policy.repo_id") {
          repo_ids.push_back(flag.value);
        } else if (name.starts_with("--ema.")) {
          plan.overrides.push_back(ema_override(flag));
        } else if (name.starts_with("--peft.")) {
          if (flag.value == "null" || flag.value == "None") break;  // PeftConfig's own default
          if (plan.resume_from)
            throw ConfigError("lerobot-train: " + name + " with --resume=true: the resumed run keeps its adapters");
          plan.overrides.push_back(peft_override(flag));
          peft_given = true;
          if (name == "--peft.method_type") peft_method_given = true;
        } else if (name == "--num_machines") {
          if (count(flag) > 1) refuse(flag, rule->why);
        } else if (name == "--machine_rank") {
          if (whole_number(flag, 0) != 0)
            refuse(flag,
                   "lrhost runs one machine here; on node K of a multi-node job run `lrhost RECIPE --nnodes N "
                   "--node-rank K --master-addr HOST --master-port P` (docs/multi_gpu.md#multi-node)");
        } else if (name == "--main_process_port") {
          plan.master_port = whole_number(flag, 0, 65535);
        } else if (name == "--dynamo_backend") {
          if (util::lowercase(flag.value) != "no")
            refuse(flag, "lrhost has no torch.compile (TorchDynamo); give --dynamo_backend=no or drop it");
        } else if (name == "--gpu_ids") {
          plan.cuda_visible_devices = cuda_visible_devices_of(flag.value, "lerobot-train: --gpu_ids");
        } else if (name == "--num_workers") {
          if (flag.value == "0") plan.notes.push_back(name + "=0: " + std::string(rule->why));
          plan.overrides.push_back("num_workers=" + (flag.value == "0" ? std::string("1") : flag.value));
        } else if (name == "--save_freq") {
          plan.overrides.push_back("save_freq=" + (flag.value.starts_with("-") ? std::string("0") : flag.value));
        } else if (name.starts_with("--optimizer.") || name.starts_with("--scheduler.")) {
          if (plan.resume_from)
            throw ConfigError("lerobot-train: " + name +
                              " with --resume=true: the resumed run keeps the "
                              "optimizer and scheduler of its checkpoint");
          // With the preset (LeRobot's default) lerobot-train replaces the whole optimizer and scheduler
          // config by the policy's (TrainPipelineConfig.validate), so the flag trains nothing there;
          // the guide's LR-scaling example types one. Trained as LeRobot trains it, said loudly.
          if (preset) {
            plan.warnings.push_back(name + "=" + flag.value +
                                    " HAS NO EFFECT: lerobot-train ignores --optimizer.*/--scheduler.* while "
                                    "--use_policy_training_preset=true (its default) and trains with the policy's "
                                    "preset; so does lrhost. To change it, set the policy's field (e.g. "
                                    "--policy.optimizer_lr=2e-4) or add --use_policy_training_preset=false");
            break;
          }
          if (auto override = optimizer_override(flag, type, fields)) plan.overrides.push_back(*override);
        } else if (name == "--use_policy_training_preset") {
          if (!preset)
            plan.notes.push_back(name +
                                 "=false: --optimizer.*/--scheduler.* set the policy's preset fields; the "
                                 "others keep the policy's values");
        } else if (name == "--wandb.enable") {
          if (boolean(flag))
            plan.notes.push_back(
                "--wandb.enable=true: lrhost writes metrics to <output_dir>/tensorboard and "
                "<output_dir>/metrics.jsonl; upload them with `wandb sync --sync-tensorboard "
                "<output_dir>/tensorboard`");
        } else if (name == "--multi_gpu") {
          plan.all_gpus = boolean(flag);
        } else if (name == "--overwrite") {
          plan.overwrite = boolean(flag);
        } else if (name == "--num_processes" || name == "--nproc") {
          plan.nproc = count(flag);
        } else if (name == "--gpus") {
          plan.gpus = count(flag);
        } else if (name == "--device") {
          if (flag.value != "auto" && flag.value != "cpu" && flag.value != "cuda")
            throw ConfigError("lerobot-train: --device expects auto, cpu or cuda, got '" + flag.value + "'");
          plan.device = flag.value;
        } else if (name == "--mixed_precision") {
          if (flag.value != "no" && flag.value != "bf16" && flag.value != "fp16")
            refuse(flag, "lrhost trains in no (fp32), bf16 or fp16 mixed precision");
          plan.overrides.push_back(std::string(rule->target) + "=" + flag.value);
        } else if (name == "--dry-run") {
          plan.dry_run = boolean(flag);
        } else if (name == "--verbose") {
          plan.verbose = boolean(flag);
        }
        // --policy.type/path, --resume, --config_path, --config_file, --job_name: the first pass used them.
        break;
    }
  }
  if (!config_file.empty() || default_config) {
    // A resumed run's type is its checkpoint's.
    std::string policy_type = type;
    if (policy_type.empty() && plan.resume_from)
      policy_type = policy::read_config_json(*plan.resume_from / "pretrained_model").value("type", std::string());
    apply_accelerate_config(plan, config_file.empty() ? *default_config : fs::path(config_file), !config_file.empty(),
                            policy_type, flags, passthrough);
  }
  // lerobot-train pushes the final model to --policy.repo_id unless --policy.push_to_hub=false; the
  // guide's own first command relies on that. lrhost trains the same and says loudly that nothing is
  // uploaded (an explicit --policy.push_to_hub=true is refused above).
  if (!repo_ids.empty() && !push_to_hub_off)
    plan.warnings.push_back("--policy.repo_id=" + repo_ids.front() +
                            ": NOT UPLOADED. lerobot-train would push the trained policy to the Hub; lrhost never "
                            "uploads. Upload it afterwards with `hf upload " +
                            repo_ids.front() + " " + (plan.run_dir ? *plan.run_dir : std::string("<output_dir>")) +
                            "/checkpoints/last/pretrained_model` (add --policy.push_to_hub=false to silence this)");
  // A --peft.* flag makes lerobot-train's PeftConfig, whose method_type defaults to LORA.
  if (peft_given && !peft_method_given) plan.overrides.push_back("policy.peft.method_type=LORA");
  if (plan.nproc && plan.gpus)
    throw ConfigError("lerobot-train: give --num_processes (or --nproc) or --gpus, not both");
  if (plan.nproc || plan.gpus) plan.all_gpus = false;      // --multi_gpu with a count: the count
  if (plan.nproc && *plan.nproc == 1) plan.nproc.reset();  // one process: no launcher needed
  if (plan.cuda_visible_devices && plan.device != "cpu") {
    const int listed =
        static_cast<int>(std::count(plan.cuda_visible_devices->begin(), plan.cuda_visible_devices->end(), ',')) + 1;
    const int wanted = plan.gpus.value_or(plan.nproc.value_or(1));
    if (wanted > listed)
      throw ConfigError("lerobot-train: " + std::to_string(wanted) + " processes but gpu_ids " +
                            *plan.cuda_visible_devices + " names " + std::to_string(listed) + " GPU(s)",
                        "one process per GPU: give --num_processes=" + std::to_string(listed) + " or list more GPUs");
  }
  if (plan.cuda_visible_devices)
    plan.notes.push_back("gpu_ids " + *plan.cuda_visible_devices +
                         ": the run sees only those GPUs (CUDA_VISIBLE_DEVICES=" + *plan.cuda_visible_devices +
                         ", as accelerate sets it)");
  if (plan.master_port && !plan.nproc && !plan.gpus && !plan.all_gpus) {
    plan.notes.push_back("--main_process_port=" + std::to_string(*plan.master_port) +
                         ": one process needs no port; ignored");
    plan.master_port.reset();
  }
  if (!plan.resume_from) {
    // lerobot-train's defaults where the shipped recipe's differ and the command line is silent.
    auto typed = [&](const std::string& key) {
      return std::any_of(plan.overrides.begin(), plan.overrides.end(),
                         [&](const std::string& o) { return o.starts_with(key + "="); }) ||
             std::any_of(passthrough.begin(), passthrough.end(),
                         [&](const std::string& o) { return o.starts_with(key + "="); });
    };
    for (const auto& [key, value] : kLeRobotLoopDefaults)
      if (!typed(key)) plan.overrides.push_back(key + "=" + value);
    // lerobot-train 0.6.1 takes accelerate's precision from the policy: dtype = "bfloat16" (pi0, pi05;
    // typed, or in the pretrained folder's config.json) trains under bf16 autocast
    // (lerobot_train.py:246-262) unless the command line says otherwise.
    const bool bf16_policy = typed("policy.dtype")
                                 ? std::any_of(plan.overrides.begin(), plan.overrides.end(),
                                               [](const std::string& o) { return o == "policy.dtype=bfloat16"; }) ||
                                       std::any_of(passthrough.begin(), passthrough.end(),
                                                   [](const std::string& o) { return o == "policy.dtype=bfloat16"; })
                                 : pretrained_bf16;
    if (bf16_policy && !typed("accelerator.mixed_precision"))
      plan.overrides.push_back("accelerator.mixed_precision=bf16");
    if (pretrained.empty())
      for (const auto& field : lerobot_mapping(type).deviating_fields)
        if (!typed("policy." + field) && fields.contains(field))
          plan.overrides.push_back(
              "policy." + field + "=" +
              (fields[field].is_string() ? fields[field].get<std::string>() : fields[field].dump()));
    // LeRobot's value where lrhost's config is null (ACT's ImageNet backbone): never train a random
    // backbone where lerobot-train would not; `--policy.pretrained_backbone_weights=null` asks for one.
    if (pretrained.empty())
      for (const auto& [field, value] : lerobot_mapping(type).lerobot_values)
        if (!typed("policy." + field)) plan.overrides.push_back("policy." + field + "=" + value);
  }
  plan.overrides.insert(plan.overrides.end(), passthrough.begin(), passthrough.end());
  // The same command rerun on its own output folder (a requeued job) continues it (lerobot_requeue.hpp).
  if (!plan.resume_from && !plan.overwrite && plan.run_dir)
    if (auto note = requeued_command_note(*plan.run_dir, plan.recipe, plan.overrides)) {
      std::replace(plan.overrides.begin(), plan.overrides.end(), std::string("resume=false"),
                   std::string("resume=auto"));
      plan.notes.push_back(*note);
    }
  return plan;
}

std::string lerobot_train_help() {
  std::string text =
      "lrhost lerobot-train [accelerate options] [lerobot-train flags] [key=value ...]\n"
      "runs lerobot-train's command line on lrhost's shipped recipe of the policy type and prints the\n"
      "equivalent `lrhost RECIPE ...` line (--dry-run: print it only). Flags (docs/lerobot.md):\n";
  for (const auto& rule : kLeRobotFlags) {
    std::string flag(rule.flag);
    if (flag.back() == '.') flag += "*";
    std::string effect = rule.kind == Kind::refuse ? "refused: " + std::string(rule.why)
                         : rule.kind == Kind::note ? "no effect: " + std::string(rule.why)
                         : !rule.target.empty() && rule.kind != Kind::special
                             ? std::string(rule.target) + (rule.flag.back() == '.' ? "*" : "") +
                                   (rule.why.empty() ? "" : " (" + std::string(rule.why) + ")")
                             : std::string(rule.why);
    text += "  " + flag + std::string(flag.size() < 34 ? 34 - flag.size() : 1, ' ') + effect + "\n";
  }
  return text;
}

std::string lerobot_style_flag_hint(const std::string& argument) {
  if (!argument.starts_with("--") || argument.size() < 3) return {};
  const auto equals = argument.find('=');
  const std::string flag = argument.substr(0, equals);
  const FlagRule* rule = find_rule(flag);
  if (rule == nullptr) return {};
  // lrhost's own launch flags, which the front door takes too: the subcommand that refused one
  // launches nothing.
  if (flag == "--gpus" || flag == "--nproc" || flag == "--device" || flag == "--overwrite")
    return flag +
           " is a launch option of `lrhost run`, `resume` and `eval`, not of this subcommand (`lrhost show` "
           "takes --nproc, --gpus, --nnodes and --device to plan for them)";
  const std::string front_door =
      "`lrhost lerobot-train " + argument + " ...` runs lerobot-train's command line as it is";
  if (rule->kind != Kind::config && rule->kind != Kind::prefix) return flag + " is a lerobot-train flag: " + front_door;
  const std::string key =
      std::string(rule->target) + (rule->kind == Kind::prefix ? flag.substr(rule->flag.size()) : "");
  return "lrhost takes config overrides as key=value, without dashes: " + key + "=" +
         (equals == std::string::npos ? "VALUE" : argument.substr(equals + 1)) + " (or " + front_door + ")";
}

}  // namespace lrhost::cli
