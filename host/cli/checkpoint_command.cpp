// `lrhost checkpoint info` and the plan of `lrhost resume`; see checkpoint_command.hpp.
#include "host/cli/checkpoint_command.hpp"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <sstream>

#include "host/ckpt/adapter_folder.hpp"
#include "host/ckpt/checkpoint_manager.hpp"
#include "host/ckpt/ema_checkpoint.hpp"
#include "host/ckpt/merge_adapters.hpp"
#include "host/ckpt/pretrained_dir.hpp"
#include "host/ckpt/sharded_state.hpp"
#include "host/ckpt/training_state.hpp"
#include "host/cli/lerobot_resume.hpp"
#include "host/io/atomic_dir.hpp"
#include "host/io/checksum_manifest.hpp"
#include "host/io/safetensors.hpp"
#include "host/optim/optimizer_state.hpp"
#include "host/policy/processors.hpp"
#include "host/util/error.hpp"
#include "host/util/strings.hpp"

namespace lrhost::cli {
namespace fs = std::filesystem;
using ckpt::path_exists;
using nlohmann::ordered_json;

namespace {

uintmax_t tree_bytes(const fs::path& root) {
  uintmax_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (it->is_regular_file(ec)) total += it->file_size(ec);
  return total;
}

ordered_json read_json(const fs::path& file) {
  return io::read_json_file(file, "the file is corrupt or truncated");
}

// Fields of LeRobot's config.json about publishing and the machine, not about the model: listed
// after the others, since they lead the file and would otherwise fill the summary.
bool is_bookkeeping_field(const std::string& key) {
  static const char* const kFields[] = {"push_to_hub", "repo_id", "private", "tags", "license", "device", "use_amp"};
  return std::any_of(std::begin(kFields), std::end(kFields), [&](const char* field) { return key == field; });
}

std::string value_text(const ordered_json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// The scalar fields of a config, "key=value", at most `limit` of them: the config's own order, with
// the bookkeeping fields last.
std::string config_summary(const ordered_json& config, std::size_t limit) {
  std::vector<std::string> fields, bookkeeping;
  for (const auto& [key, value] : config.items()) {
    if (key == "type" || value.is_object() || (value.is_array() && value.size() > 4)) continue;
    (is_bookkeeping_field(key) ? bookkeeping : fields).push_back(key + "=" + value_text(value));
  }
  fields.insert(fields.end(), bookkeeping.begin(), bookkeeping.end());
  std::string text;
  for (std::size_t i = 0; i < std::min(limit, fields.size()); ++i) text += (i ? ", " : "") + fields[i];
  if (fields.size() > limit) text += ", ... (" + std::to_string(fields.size() - limit) + " more)";
  return text.empty() ? "(no scalar fields)" : text;
}

// The first of `paths` (each a key path) that leads to a scalar in `config`.
std::optional<std::string> first_scalar(const ordered_json& config,
                                        std::initializer_list<std::initializer_list<const char*>> paths) {
  for (const auto& path : paths) {
    const ordered_json* node = &config;
    for (const char* key : path) {
      if (!node->is_object() || !node->contains(key)) {
        node = nullptr;
        break;
      }
      node = &(*node)[key];
    }
    if (node == nullptr || node->is_null() || node->is_object() || node->is_array()) continue;
    if (node->is_string() && node->get<std::string>().empty()) continue;  // "": the recipe's default
    return value_text(*node);
  }
  return std::nullopt;
}

// An adapter folder's LoRA: its base, rank, scaling, targets and what it trains.
void describe_adapters(std::ostream& out, const fs::path& dir) {
  const auto adapter = ckpt::read_adapter_config(dir);
  const auto& lora = adapter.settings.lora;
  out << "  LoRA adapters on base " << adapter.base_model_name_or_path << ": r " << lora.r << ", lora_alpha "
      << lora.alpha << " (scaling " << lora.scaling() << (lora.use_rslora ? ", rslora" : "") << "), targets "
      << adapter.settings.targets->to_json().dump() << ", full_training_modules "
      << nlohmann::json(adapter.settings.full_training_modules).dump() << "\n";
}

void describe_pretrained(std::ostream& out, const fs::path& dir) {
  auto config = policy::read_config_json(dir);
  const bool adapters = ckpt::is_adapter_folder(dir);
  const char* weights = adapters ? ckpt::kAdapterModelFile : ckpt::kModelFile;
  auto model = io::read_safetensors(dir / weights);
  int64_t numel = 0;
  for (const auto& [name, tensor] : model.tensors) numel += tensor.numel();
  std::error_code ec;
  out << "  policy: " << config["type"].get<std::string>() << ", " << numel
      << (adapters ? " trainable parameters (adapters and modules trained in full)" : " parameters and buffers")
      << " in " << model.tensors.size() << " tensors (" << weights << " "
      << util::human_bytes(fs::file_size(dir / weights, ec)) << ")\n";
  if (adapters) describe_adapters(out, dir);
  out << "  config: " << config_summary(config, 12) << "\n";
  if (policy::PolicyProcessors::present(dir)) {
    auto processors = policy::PolicyProcessors::load(dir);
    const auto& n = processors.normalizer();
    std::string modes;
    for (const auto& [type, mode] : n.norm_map) modes += (modes.empty() ? "" : ", ") + type + "=" + mode;
    out << "  processors: normalizer over " << n.features.size() << " feature(s) ("
        << (modes.empty() ? "no normalization" : modes) << "), stats of " << n.stats.size() << " feature(s)\n";
  } else {
    out << "  processors: none\n";
  }
}

void describe_training_state(std::ostream& out, const fs::path& state) {
  if (path_exists(state / ckpt::kTrainingStepFile)) {
    auto step = ckpt::load_training_step(state);
    out << "  data parallel: " << step.dp_world_size << " rank(s) x batch_size " << step.batch_size
        << ", gradient accumulation " << step.grad_accum_steps << "\n";
    if (step.sampler.is_object())
      out << "  sampler: epoch " << step.sampler.value("epoch", nlohmann::json()).dump() << ", start_index "
          << step.sampler.value("start_index", nlohmann::json()).dump() << "\n";
  }
  if (path_exists(state / optim::kOptimizerParamGroupsFile)) {
    auto groups = read_json(state / optim::kOptimizerParamGroupsFile);
    // FSDP checkpoints keep the per-parameter state in their shard files.
    const bool sharded = path_exists(state / ckpt::kShardsDir);
    std::string where = sharded
                            ? "in the FSDP shard files"
                            : std::to_string(io::read_safetensors(state / optim::kOptimizerStateFile).tensors.size()) +
                                  " state tensors";
    std::string lrs;
    bool decoupled = false;
    for (const auto& g : groups) {
      if (g.contains("lr")) lrs += (lrs.empty() ? "" : ", ") + g["lr"].dump();
      decoupled = decoupled || g.value("decoupled_weight_decay", false);
    }
    using optim::OptimizerKind;
    const OptimizerKind kind = groups.size() && groups[0].contains("betas")
                                   ? (decoupled ? OptimizerKind::adamw : OptimizerKind::adam)
                                   : OptimizerKind::sgd;
    out << "  optimizer: " << optim::optimizer_kind_name(kind) << ", " << groups.size() << " group(s), lr " << lrs
        << ", " << where << "\n";
  } else {
    out << "  optimizer: none\n";
  }
  if (path_exists(state / ckpt::kShardsDir / ckpt::kShardIndexFile)) {
    auto index = read_json(state / ckpt::kShardsDir / ckpt::kShardIndexFile);
    out << "  sharded (FSDP): " << index.value("files", nlohmann::json::array()).size() << " shard file(s), dp_shard "
        << index.value("shard_size", nlohmann::json()).dump() << " x dp_replicate "
        << index.value("replicate_size", nlohmann::json()).dump() << ", "
        << index.value("params", nlohmann::json::object()).size()
        << " trainable sharded parameters; resumable at any rank count\n";
  }
  if (path_exists(state / optim::kEmaStateFile)) {
    auto ema = read_json(state / optim::kEmaStateFile);
    const auto settings = ema.value("settings", nlohmann::json::object());
    const auto decay = settings.value("decay", nlohmann::json());
    out << "  ema: step " << ema.value("optimization_step", nlohmann::json()).dump() << ", last decay "
        << ema.value("cur_decay_value", nlohmann::json()).dump() << " ("
        << (decay.is_number() ? "constant decay " + decay.dump()
                              : "warm-up schedule, max_decay " + settings.value("max_decay", nlohmann::json()).dump())
        << "), " << ema.value("tracked", nlohmann::json()).dump() << " tracked tensors; weights in "
        << ckpt::kPretrainedEmaDir << "/\n";
  }
  if (path_exists(state / optim::kSchedulerStateFile)) {
    auto scheduler = read_json(state / optim::kSchedulerStateFile);
    out << "  scheduler: last_epoch " << scheduler.value("last_epoch", nlohmann::json()).dump() << "\n";
  }
}

// `checked`: the caller has just found the checkpoint sound (checkpoint_data_damage, every file
// read), so its data need not be read again.
void describe_step_dir(std::ostream& out, const fs::path& step_dir, bool checked = false) {
  const fs::path pretrained = step_dir / ckpt::kPretrainedDir, state = step_dir / ckpt::kTrainingStateDir;
  auto missing = ckpt::missing_checkpoint_files(step_dir);
  out << "checkpoint: " << step_dir.string() << "\n";
  std::string missing_text;
  for (const auto& m : missing) missing_text += (missing_text.empty() ? "" : ", ") + m;
  std::string verified;
  if (missing.empty() && !path_exists(step_dir / ckpt::kChecksumsFile)) {
    auto lost = ckpt::missing_lrhost_manifest(step_dir);
    verified = lost ? ", but damaged: " + *lost : " (unverified: no " + std::string(ckpt::kChecksumsFile) + ")";
  } else if (missing.empty() && checked) {
    verified = ", verified";
  } else if (missing.empty()) {
    auto check = ckpt::verify_checkpoint(step_dir);
    verified = check.ok() ? ", verified (" + std::to_string(check.verified.size()) + " files, " +
                                util::human_bytes(check.bytes) + ")"
                          : ", but its data does not match " + std::string(ckpt::kChecksumsFile) + ": " +
                                io::describe(check.mismatches.front()) + " (lrhost checkpoint verify lists all)";
  }
  out << "  complete: " << (missing.empty() ? "yes" + verified : "no (missing " + missing_text + ")") << "\n";
  if (path_exists(state / ckpt::kTrainingStepFile)) {
    auto step = ckpt::load_training_step(state);
    out << "  step: " << step.step;
    if (path_exists(pretrained / ckpt::kTrainConfigFile)) {
      auto train = read_json(pretrained / ckpt::kTrainConfigFile);
      if (train.contains("steps") && train["steps"].is_number_integer()) out << " of " << train["steps"].get<int64_t>();
    }
    out << "\n";
  }
  // What a user looks for first, whatever order the configs keep their fields in.
  if (path_exists(pretrained / ckpt::kTrainConfigFile)) {
    const fs::path config_file = pretrained / ckpt::kConfigFile;
    ordered_json policy_config = path_exists(config_file) ? read_json(config_file) : ordered_json::object();
    std::string summary = training_summary(read_json(pretrained / ckpt::kTrainConfigFile), policy_config);
    if (!summary.empty()) out << "  training: " << summary << "\n";
  }
  if (path_exists(pretrained / ckpt::kConfigFile)) describe_pretrained(out, pretrained);
  describe_training_state(out, state);
  if (path_exists(pretrained / ckpt::kTrainConfigFile))
    out << "  train config: " << config_summary(read_json(pretrained / ckpt::kTrainConfigFile), 10) << "\n";
  if (path_exists(pretrained / ckpt::kLaunchFile)) {
    auto launch = read_json(pretrained / ckpt::kLaunchFile);
    std::string overrides;
    for (const auto& o : launch.value("overrides", ordered_json::array()))
      overrides += (overrides.empty() ? "" : " ") + o.get<std::string>();
    out << "  recipe: " << launch.value("recipe", std::string()) << (overrides.empty() ? "" : " " + overrides)
        << (launch.contains("recipe_copy") ? std::string(" (copy: pretrained_model/") + ckpt::kRecipeCopyFile + ")"
                                           : std::string())
        << "\n";
  }
  out << "  size: pretrained_model " << util::human_bytes(tree_bytes(pretrained)) << ", training_state "
      << util::human_bytes(tree_bytes(state)) << ", total " << util::human_bytes(tree_bytes(step_dir)) << "\n";
}

}  // namespace

std::string training_summary(const ordered_json& train_config, const ordered_json& policy_config) {
  auto policy = first_scalar(train_config, {{"policy", "type"}});
  if (!policy) policy = first_scalar(policy_config, {{"type"}});
  // Recipes keep the lr under optimizer (LeRobot, the MLP recipes) or in the policy (ACT's optimizer_lr).
  auto lr = first_scalar(train_config, {{"optimizer", "lr"}, {"policy", "optimizer_lr"}, {"lr"}});
  if (!lr) lr = first_scalar(policy_config, {{"optimizer_lr"}});
  const std::pair<const char*, std::optional<std::string>> fields[] = {
      {"policy", policy},
      {"steps", first_scalar(train_config, {{"steps"}})},
      {"batch_size", first_scalar(train_config, {{"batch_size"}})},
      {"lr", lr},
      {"dataset", first_scalar(train_config, {{"dataset", "repo_id"}, {"dataset", "root"}, {"dataset"}})},
  };
  std::string text;
  for (const auto& [name, value] : fields)
    if (value) text += (text.empty() ? "" : ", ") + std::string(name) + " " + *value;
  return text;
}

std::string checkpoint_info(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) throw util::IoError(path.string() + ": no such folder");
  std::ostringstream out;
  fs::path dir = fs::weakly_canonical(path, ec);
  if (ec) dir = path;
  // A bare pretrained folder (save_pretrained output, no training state).
  if (path_exists(dir / ckpt::kConfigFile) && dir.filename() != ckpt::kPretrainedDir) {
    out << "pretrained policy: " << dir.string() << "\n";
    const std::string weights = ckpt::is_adapter_folder(dir) ? ckpt::kAdapterModelFile : ckpt::kModelFile;
    auto missing = path_exists(dir / weights) ? "" : weights;
    out << "  complete: " << (missing.empty() ? "yes" : "no (missing " + missing + ")") << "\n";
    describe_pretrained(out, dir);
    out << "  size: " << util::human_bytes(tree_bytes(dir)) << "\n";
    return out.str();
  }
  fs::path checkpoints = path_exists(dir / ckpt::kCheckpointsDir) ? dir / ckpt::kCheckpointsDir : dir;
  bool listing = !path_exists(dir / ckpt::kConfigFile) && !path_exists(dir / ckpt::kPretrainedDir) &&
                 !path_exists(dir / ckpt::kTrainingStateDir);
  if (listing) {
    auto scan = ckpt::scan_checkpoints(checkpoints, false, /*validate=*/true, ckpt::checkpoint_data_damage);
    if (scan.complete.empty() && scan.incomplete.empty() && scan.temporary.empty())
      throw util::IoError(path.string() + " is not a checkpoint folder",
                          "give an output dir (with checkpoints/), a checkpoints dir, a step dir (e.g. "
                          "checkpoints/000100) or its pretrained_model dir");
    out << "checkpoints in " << checkpoints.string() << ":\n";
    auto same = [&](const fs::path& a, const fs::path& b) {
      return fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
    };
    for (const auto& p : scan.complete) {
      std::string damage;
      for (const auto& [damaged, why] : scan.damaged)
        if (same(damaged, p)) damage = why;
      const bool newest = scan.last_complete && same(*scan.last_complete, p);  // the one checked
      std::string state = "  complete";
      if (newest) state += path_exists(p / ckpt::kChecksumsFile) ? ", verified" : " (unverified: no manifest)";
      out << "  " << p.filename().string() << (damage.empty() ? state : "  damaged: " + damage)
          << (scan.last_link && same(*scan.last_link, p) ? " (last)" : "") << "\n";
    }
    for (const auto& p : scan.incomplete)
      out << "  " << p.filename().string() << "  incomplete (missing " << ckpt::missing_checkpoint_files(p).front()
          << ")\n";
    for (const auto& p : scan.temporary) out << "  " << p.filename().string() << "  interrupted save (ignored)\n";
    for (auto it = fs::directory_iterator(checkpoints, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
      if (it->path().filename().string().rfind("superseded-", 0) == 0)
        out << "  " << it->path().filename().string() << "/  checkpoints moved aside by a resume or --overwrite\n";
    if (scan.last_link && !scan.last_complete)
      out << "  last -> " << scan.last_link->string() << " (missing, incomplete or damaged)\n";
    if (!scan.last_complete)
      throw util::DataError(checkpoints.string() + " holds no complete checkpoint" +
                            (scan.damaged.empty() ? "" : " that is not damaged") + ":\n" + out.str());
    if (!scan.damaged.empty())
      out << "newest is damaged: resume falls back to " << scan.last_complete->filename().string() << "\n";
    describe_step_dir(out, *scan.last_complete, /*checked=*/true);
    return out.str();
  }
  describe_step_dir(out, ckpt::resolve_checkpoint_dir(dir));
  return out.str();
}

void add_checkpoint_command(CLI::App& app, CheckpointCommand& command) {
  auto* checkpoint = app.add_subcommand("checkpoint", "inspect training checkpoints");
  checkpoint->require_subcommand(1);
  command.info = checkpoint->add_subcommand(
      "info",
      "step, policy, sizes, config summary and completeness of a checkpoint (output dir, checkpoints dir, "
      "step dir or pretrained_model dir)");
  command.info->add_option("dir", command.path, "checkpoint folder")->required();
  command.verify = checkpoint->add_subcommand(
      "verify",
      "check every file of a checkpoint against its checksums.json (a step dir: that checkpoint; an output or "
      "checkpoints dir: every complete one); exit code 1 when any data does not match");
  command.verify->add_option("dir", command.path, "checkpoint folder")->required();
  command.merge = checkpoint->add_subcommand(
      "merge",
      "fold a LoRA checkpoint's adapters into its base: OUT is a plain pretrained folder (model.safetensors with "
      "W + B·A·scaling, config.json with use_peft false, processors) that LeRobot loads as an ordinary policy");
  command.merge->add_option("dir", command.path, "adapter folder (pretrained_model), step dir or output dir")
      ->required();
  command.merge->add_option("--out", command.out, "the new pretrained folder")->required();
}

int verify_checkpoints(const fs::path& path, std::ostream& out) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) throw util::IoError(path.string() + ": no such folder");
  fs::path dir = fs::weakly_canonical(path, ec);
  if (ec) dir = path;
  if (dir.filename() == ckpt::kPretrainedDir && !path_exists(dir / ckpt::kChecksumsFile)) dir = dir.parent_path();
  std::vector<fs::path> step_dirs;
  if (path_exists(dir / ckpt::kChecksumsFile) || path_exists(dir / ckpt::kPretrainedDir) ||
      path_exists(dir / ckpt::kTrainingStateDir)) {
    step_dirs.push_back(dir);
  } else {
    fs::path checkpoints = path_exists(dir / ckpt::kCheckpointsDir) ? dir / ckpt::kCheckpointsDir : dir;
    auto scan = ckpt::scan_checkpoints(checkpoints, false);
    step_dirs = scan.complete;
    if (step_dirs.empty())
      throw util::IoError(path.string() + " holds no complete checkpoint",
                          "give an output dir (with checkpoints/), a checkpoints dir or a step dir");
  }
  int bad = 0;
  for (const auto& step_dir : step_dirs) {
    auto check = ckpt::verify_checkpoint(step_dir);
    const std::string name = step_dirs.size() > 1 ? step_dir.filename().string() : step_dir.string();
    if (!check.has_manifest) {
      if (auto lost = ckpt::missing_lrhost_manifest(step_dir)) {
        ++bad;
        out << name << ": DAMAGED: " << *lost << "\n";
      } else {
        out << name << ": unverified (no manifest: a LeRobot checkpoint)\n";
      }
      continue;
    }
    if (check.ok()) {
      out << name << ": verified (" << check.verified.size() << " files, " << util::human_bytes(check.bytes) << ")\n";
    } else {
      ++bad;
      out << name << ": DATA DOES NOT MATCH " << ckpt::kChecksumsFile << " (" << check.mismatches.size()
          << " mismatch(es), " << check.verified.size() << " files sound)\n";
      for (const auto& mismatch : check.mismatches) out << "  " << io::describe(mismatch) << "\n";
    }
    for (const auto& file : check.unlisted) out << "  note: " << file << " is not in the manifest (not checked)\n";
  }
  return bad > 0 ? 1 : 0;
}

int run_checkpoint_command(const CheckpointCommand& command) {
  if (command.verify && command.verify->parsed()) return verify_checkpoints(command.path, std::cout);
  if (command.merge && command.merge->parsed()) {
    const auto report = ckpt::merge_adapter_folder(command.path, command.out);
    std::cout << "merged " << report.merged_layers << " LoRA layer(s) of " << report.adapter_dir.string()
              << " into its base " << report.base << " (" << report.trained_fully
              << " module(s) trained in full kept as trained): " << command.out << "\n";
    return 0;
  }
  if (!command.info || !command.info->parsed()) return -1;
  std::cout << checkpoint_info(command.path);
  return 0;
}

ResumePlan plan_resume(const fs::path& checkpoint) {
  ResumePlan plan;
  // What this process reads of a checkpoint is its recipe copy, so that is what it verifies (a few
  // KB); the ranks verify the state they restore as they read it, and fall back past damaged data
  // unless `checkpoint` names one step folder.
  auto damage_check = [](const fs::path& step_dir) -> std::optional<std::string> {
    if (auto damage = ckpt::checkpoint_damage(step_dir)) return damage;
    auto check = io::verify_checksum_manifest(step_dir / ckpt::kChecksumsFile, [](const std::string& file) {
      return file.rfind(std::string(ckpt::kPretrainedDir) + "/train_", 0) == 0;
    });
    if (!check.mismatches.empty()) return io::describe(check.mismatches.front()) + ", against " + ckpt::kChecksumsFile;
    return std::nullopt;
  };
  plan.step_dir = fs::absolute(ckpt::resolve_checkpoint_dir(checkpoint, damage_check));
  plan.resume_from = ckpt::names_one_checkpoint(checkpoint) ? plan.step_dir : fs::absolute(checkpoint);
  auto missing = ckpt::missing_checkpoint_files(plan.step_dir);
  if (!missing.empty())
    throw util::DataError(plan.step_dir.string() + " is an incomplete checkpoint (missing " + missing.front() + ")",
                          "resume from an earlier checkpoint");
  if (auto damage = damage_check(plan.step_dir))
    throw util::DataError(plan.step_dir.string() + " is damaged: " + *damage,
                          "resume from an earlier checkpoint, or give the run folder to use its newest sound one");
  const fs::path pretrained = plan.step_dir / ckpt::kPretrainedDir;
  if (!path_exists(pretrained / ckpt::kLaunchFile) && path_exists(pretrained / ckpt::kTrainConfigFile)) {
    auto train = read_json(pretrained / ckpt::kTrainConfigFile);
    if (is_lerobot_train_config(train)) {
      auto lerobot = plan_lerobot_resume(plan.step_dir, train, policy::read_config_json(pretrained));
      plan.recipe = lerobot.recipe;
      plan.overrides = lerobot.overrides;
      plan.warnings = lerobot.warnings;
      return plan;
    }
  }
  if (!path_exists(pretrained / ckpt::kLaunchFile) || !path_exists(pretrained / ckpt::kRecipeCopyFile))
    throw util::ConfigError(plan.step_dir.string() + " holds no recipe copy (" + std::string(ckpt::kLaunchFile) + ", " +
                                ckpt::kRecipeCopyFile + ") and is not a lerobot-train checkpoint",
                            "run the recipe again with resume=true and the same output_dir instead");
  auto launch = read_json(pretrained / ckpt::kLaunchFile);
  auto train = read_json(pretrained / ckpt::kTrainConfigFile);
  if (!train.is_object() || !train.contains("resume"))
    throw util::ConfigError("the recipe of " + plan.step_dir.string() + " has no `resume` config key",
                            "a resumable recipe declares resume = false in lr.config and passes cfg.resume to "
                            "lr.checkpoint");
  plan.recipe = (pretrained / ckpt::kRecipeCopyFile).string();
  if (path_exists(pretrained / ckpt::kModulesDir)) plan.modules_dir = pretrained / ckpt::kModulesDir;
  auto drop = [](const std::string& o, const std::string& key) { return o.rfind(key + "=", 0) == 0; };
  // `parallelism.dp_shard=N` typed for an N-rank FSDP job names that rank count: resumed on another,
  // it would refuse to start. It becomes -1 (one shard group over all ranks), which is N at N ranks.
  const auto saved = ckpt::load_training_step(plan.step_dir / ckpt::kTrainingStateDir);
  const std::string saved_shard = "parallelism.dp_shard=" + std::to_string(saved.dp_world_size);
  for (const auto& o : launch.value("overrides", ordered_json::array())) {
    std::string text = o.get<std::string>();
    if (drop(text, "resume") || drop(text, "output_dir")) continue;
    if (text == saved_shard && saved.dp_world_size > 1 && saved.dp_replicate == 1) {
      plan.notes.push_back(text +
                           " was the saved run's rank count: resuming with parallelism.dp_shard=-1 (one "
                           "shard group over all ranks, the same at " +
                           std::to_string(saved.dp_world_size) + " ranks), so the run continues at any rank count");
      text = "parallelism.dp_shard=-1";
    }
    plan.overrides.push_back(text);
  }
  // checkpoints/<step> -> the run's output folder.
  if (train.contains("output_dir"))
    plan.overrides.push_back("output_dir=" + plan.step_dir.parent_path().parent_path().string());
  plan.overrides.push_back("resume=true");
  return plan;
}

}  // namespace lrhost::cli
