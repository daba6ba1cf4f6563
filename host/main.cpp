// Entry point of the lrhost binary: parses the command line and dispatches to a subcommand.
//   lrhost RECIPE.lua [key=value ...]        same as `lrhost run`
//   lrhost run RECIPE.lua [key=value ...]    run a recipe (in this process, or --nproc/--gpus ranks)
//   lrhost show RECIPE.lua [key=value ...]   print the resolved config without training
//   lrhost dataset synth|info|verify ...    write the built-in dataset / describe / check a dataset
//   lrhost checkpoint info DIR              describe a checkpoint (step, policy, sizes, completeness)
//   lrhost resume CHECKPOINT_DIR [flags] [key=value ...]   re-run a checkpoint's recipe copy from it
//   lrhost tokenize TOKENIZER_DIR [--max-length N] [--padding ...] TEXT...   token ids as JSON lines
//   lrhost plot RUN_DIR... [--out FILE.png] [--metrics a,b] [--x step|time]   training curves as a PNG
//   lrhost eval CHECKPOINT_DIR [--episodes N] [--videos N] [--nproc N]   closed-loop evaluation (push task)
//   lrhost lerobot-train [--num_processes N] --policy.path=... --batch_size=...   lerobot-train's command line
//   lrhost --version
#include <torch/cuda.h>
#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "host/cli/accelerate_config.hpp"
#include "host/cli/checkpoint_command.hpp"
#include "host/cli/dataset_command.hpp"
#include "host/cli/eval_run_dir.hpp"
#include "host/cli/lerobot_train.hpp"
#include "host/cli/number_checks.hpp"
#include "host/cli/plot_command.hpp"
#include "host/cli/recipe_process.hpp"
#include "host/cli/recipe_request.hpp"
#include "host/cli/tokenize_command.hpp"
#include "host/cli/version.hpp"
#include "host/dist/comm.hpp"
#include "host/launch/error_file.hpp"
#include "host/launch/launcher.hpp"
#include "host/launch/resume_hint.hpp"
#include "host/launch/run_dir.hpp"
#include "host/util/error.hpp"
#include "host/util/log.hpp"
#include "host/util/output_buffering.hpp"
#include "host/util/save_on_signal.hpp"
#include "host/util/shipped_paths.hpp"
#include "host/util/strings.hpp"

#ifdef LRHOST_WITH_JEMALLOC
// jemalloc's start-up options for this binary (MALLOC_CONF in the environment overrides them). Freed
// memory is kept for reuse instead of being handed back to the kernel after a delay: a training step
// frees and re-allocates the same large activation, gradient and optimizer buffers every step, and
// with glibc malloc (or jemalloc's default 10 s decay) each comes back as fresh pages the kernel must
// fault in and zero again, a quarter to a third of a CPU step's time (docs/benchmarks.md). The
// resident size stays at the step's peak, which the step needs anyway. Exported (ENABLE_EXPORTS) so
// that libjemalloc finds it; `lrhost --version` reports what is in force.
extern "C" {
const char* malloc_conf = "dirty_decay_ms:-1,muzzy_decay_ms:-1";
}
#endif

namespace {

struct RecipeArguments {
  std::string recipe;
  std::vector<std::string> overrides;
  int threads = 0;
  bool verbose = false;
  bool json = false;                      // show --json
  std::vector<int64_t> gpu_memory_bytes;  // show --gpu-memory
};

// Flags of `run` only: where the recipe runs (ranks, devices, nodes) and where its outputs go.
struct LaunchArguments {
  std::optional<int> nproc, gpus;
  std::string device = "auto";
  // The launcher's defaults, in one place (launch_options.hpp; the resume line leaves them out).
  int nnodes = 1, node_rank = 0, master_port = 0, max_restarts = lrhost::launch::LaunchOptions{}.max_restarts,
      timeout_s = lrhost::launch::LaunchOptions{}.timeout_s,
      rendezvous_timeout_s = lrhost::launch::LaunchOptions{}.rendezvous_timeout_s;
  std::string master_addr = lrhost::launch::LaunchOptions{}.master_addr;
  std::optional<std::string> run_dir;
  std::optional<std::string> save_on_signal;
  bool overwrite = false;
  std::vector<CLI::Option*> multi_process_only;  // flags that need --nproc/--gpus
};

void add_recipe_arguments(CLI::App& command, RecipeArguments& args) {
  command.add_option("recipe", args.recipe, "Lua recipe file")->required();
  command.add_option("overrides", args.overrides, "config overrides: key=value or a.b.c=value");
  command.add_option("--threads", args.threads, "CPU threads for LibTorch ops (default: LibTorch's choice)")
      ->check(lrhost::cli::positive_number);
  command.add_flag("-v,--verbose", args.verbose, "debug-level logging");
}

void add_launch_arguments(CLI::App& command, LaunchArguments& args) {
  command.add_option("--nproc", args.nproc, "start N rank processes on this node (see docs/multi_gpu.md)");
  command.add_option("--gpus", args.gpus, "start N ranks, one per GPU: --nproc N --device cuda");
  command.add_option("--device", args.device, "device of the ranks: auto (cuda when available), cpu, cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  args.multi_process_only = {
      command.add_option("--nnodes", args.nnodes, "number of nodes of the job")->capture_default_str(),
      command.add_option("--node-rank", args.node_rank, "this node's index in [0, --nnodes)")->capture_default_str(),
      command.add_option("--master-addr", args.master_addr, "address of node 0 (hosts the store)")
          ->capture_default_str(),
      command.add_option("--master-port", args.master_port, "store port on node 0; 0: a free port (single node only)")
          ->capture_default_str(),
      command.add_option("--max-restarts", args.max_restarts, "restart the whole group up to K times after a failure")
          ->capture_default_str(),
  };
  command.add_option("--timeout", args.timeout_s, "collective timeout in seconds")->capture_default_str();
  command
      .add_option("--rendezvous-timeout", args.rendezvous_timeout_s,
                  "seconds to wait for every rank and node to arrive at the store")
      ->capture_default_str();
  command.add_option("--run-dir", args.run_dir,
                     "run directory (logs, error files); default outputs/lrhost/<date>_<time>_<recipe>");
  command.add_option("--save-on-signal", args.save_on_signal,
                     "signals after which every rank finishes its step, all save a checkpoint there and the job "
                     "exits with code 75 (preempted; resume=auto continues): a comma-separated list of TERM, USR1, "
                     "USR2, HUP, INT, XCPU, or none; a second signal aborts the save. Default: TERM,USR1 "
                     "(docs/multi_gpu.md#preemption)");
  command.add_flag("--overwrite", args.overwrite,
                   "let a fresh run (resume=false) start in an output folder that holds an earlier run's "
                   "checkpoints (they are moved aside to checkpoints/superseded-<time>/)");
}

void check_launch_flags(const LaunchArguments& launch) {
  bool launching = launch.nproc || launch.gpus;
  std::string given;
  for (const auto* option : launch.multi_process_only)
    if (option->count() > 0) given += (given.empty() ? "" : ", ") + option->get_name();
  if (const char* rank = std::getenv("RANK"); rank != nullptr && (launching || !given.empty()))
    throw lrhost::util::ConfigError(
        std::string("RANK=") + rank +
            " is set, so this process already is one rank of a job (started by lrhost, "
            "torchrun or Slurm); " +
            (launching ? std::string(launch.nproc ? "--nproc" : "--gpus") : given) + " would start a job inside it",
        "drop the launcher flags (the job's launcher already chose them), or unset RANK to launch from here");
  if (!launching && !given.empty())
    throw lrhost::util::ConfigError(given + " only apply to a launched job, but neither --nproc nor --gpus was given",
                                    "add --nproc N (CPU or GPU ranks) or --gpus N");
}

int run(const RecipeArguments& args, lrhost::cli::RecipeMode mode, const LaunchArguments* launch,
        int planned_world_size = 0) {
  if (launch) check_launch_flags(*launch);
  // The ranks (and this process, when it runs the recipe itself) read the list from the
  // environment; a user of torchrun or srun sets LRHOST_SAVE_ON_SIGNAL for the same effect.
  if (launch && launch->save_on_signal)
    ::setenv(lrhost::util::kSaveOnSignalVariable,
             lrhost::util::format_save_signals(lrhost::util::parse_save_signals(*launch->save_on_signal)).c_str(), 1);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(args.recipe, ec)) {
    std::string message = "recipe file '" + args.recipe + "' not found";
    std::fprintf(stderr, "lrhost: error: %s\n", message.c_str());
    lrhost::launch::record_error_for_launcher(message);
    return 2;
  }
  if (launch && (launch->nproc || launch->gpus)) {
    auto choice = lrhost::launch::choose_devices({launch->nproc, launch->gpus, launch->device},
                                                 static_cast<int>(torch::cuda::device_count()));
    lrhost::launch::LaunchOptions options;
    options.recipe = args.recipe;
    // Ranks get the recipe, its overrides and the per-process options; every launcher flag
    // reaches them through the environment instead.
    options.rank_arguments = {"run"};
    if (args.threads > 0)
      options.rank_arguments.insert(options.rank_arguments.end(), {"--threads", std::to_string(args.threads)});
    if (args.verbose) options.rank_arguments.push_back("--verbose");
    options.rank_arguments.push_back(args.recipe);
    options.rank_arguments.insert(options.rank_arguments.end(), args.overrides.begin(), args.overrides.end());
    options.nproc = *choice.nproc;
    options.device = choice.device;
    options.nnodes = launch->nnodes;
    options.node_rank = launch->node_rank;
    options.master_addr = launch->master_addr;
    options.master_port = launch->master_port;
    options.max_restarts = launch->max_restarts;
    options.timeout_s = launch->timeout_s;
    options.overwrite = launch->overwrite;
    options.save_signals = lrhost::util::save_signals_from_environment();
    options.rendezvous_timeout_s = launch->rendezvous_timeout_s;
    const char* inherited_run_dir = std::getenv("LRHOST_RUN_DIR");
    options.run_dir = std::filesystem::absolute(launch->run_dir ? std::filesystem::path(*launch->run_dir)
                                                : inherited_run_dir != nullptr && *inherited_run_dir != 0
                                                    ? std::filesystem::path(inherited_run_dir)
                                                    : lrhost::launch::default_run_dir(args.recipe));
    options.claimed_run_dir = !launch->run_dir && (inherited_run_dir == nullptr || *inherited_run_dir == 0);
    options.verbose = args.verbose;
    // The ranks' resume line repeats these flags (resume_hint.hpp).
    ::setenv(lrhost::launch::kResumeFlagsVariable, lrhost::launch::resume_flags(options, args.threads).c_str(), 1);
    return lrhost::launch::launch(options);
  }

  // Holds the run folder's lock until the recipe is done (when this process owns it).
  std::optional<lrhost::cli::RecipeProcess> process;
  if (mode == lrhost::cli::RecipeMode::run) {
    // The process the user started (not a rank: its launcher chose the flags) repeats its own in
    // the resume line.
    if (std::getenv("RANK") == nullptr)
      ::setenv(lrhost::launch::kResumeFlagsVariable,
               lrhost::launch::resume_flags_in_process(launch ? launch->device : "auto", args.threads).c_str(), 1);
    // A rank started by torchrun/Slurm takes --rendezvous-timeout unless the environment sets it.
    if (launch) setenv("LRHOST_RENDEZVOUS_TIMEOUT_S", std::to_string(launch->rendezvous_timeout_s).c_str(), 0);
    process = lrhost::cli::prepare_recipe_process({.recipe = args.recipe,
                                                   .verbose = args.verbose,
                                                   .run_dir = launch ? launch->run_dir : std::nullopt,
                                                   .device = launch ? launch->device : "auto",
                                                   .timeout_s = launch ? launch->timeout_s : 600,
                                                   .overwrite = launch && launch->overwrite});
  } else {
    // `show` trains nothing: no run directory, console logging only.
    lrhost::util::setup_logging({.rank = lrhost::util::rank_from_environment(), .verbose = args.verbose});
  }
  if (args.threads > 0) {
    torch::set_num_threads(args.threads);
    torch::set_num_interop_threads(1);
  }
  int code = lrhost::cli::run_recipe(
      {args.recipe, args.overrides, mode, planned_world_size, args.json, args.gpu_memory_bytes});
  lrhost::dist::shutdown_process_comm();
  return code;
}

// `lrhost resume CHECKPOINT [key=value ...]`: the recipe copy stored in the checkpoint with its
// overrides, then `extra_overrides`.
int resume(const std::string& from, const std::vector<std::string>& extra_overrides, RecipeArguments args,
           LaunchArguments launch) {
  auto plan = lrhost::cli::plan_resume(from);
  // lr.checkpoint{resume = true} continues from this checkpoint, or the newest sound one of the
  // folder given (ranks inherit it).
  ::setenv("LRHOST_RESUME_FROM", plan.resume_from.c_str(), 1);
  // The modules the recipe copy required come from the checkpoint too (ranks inherit it).
  if (plan.modules_dir) ::setenv("LRHOST_RECIPE_MODULES", plan.modules_dir->c_str(), 1);
  args.recipe = plan.recipe;
  args.overrides = plan.overrides;
  args.overrides.insert(args.overrides.end(), extra_overrides.begin(), extra_overrides.end());
  // The resumed run logs into the run folder it continues (checkpoints/<step> -> the output
  // folder), not into a new one; --run-dir or $LRHOST_RUN_DIR still choose another.
  const char* inherited_run_dir = std::getenv("LRHOST_RUN_DIR");
  if (!launch.run_dir && (inherited_run_dir == nullptr || *inherited_run_dir == '\0'))
    launch.run_dir = plan.step_dir.parent_path().parent_path().string();
  std::fprintf(stderr, "lrhost: resuming %s from %s\n", plan.recipe.c_str(), plan.step_dir.c_str());
  for (const auto& warning : plan.warnings) std::fprintf(stderr, "lrhost: warning: %s\n", warning.c_str());
  for (const auto& note : plan.notes) std::fprintf(stderr, "lrhost: note: %s\n", note.c_str());
  return run(args, lrhost::cli::RecipeMode::run, &launch);
}

// `lrhost lerobot-train ...`: lerobot-train's and accelerate's flags mapped onto a shipped recipe
// (host/cli/lerobot_train.hpp); prints the equivalent lrhost command, then runs it.
int lerobot_train(const std::vector<std::string>& arguments) {
  for (const auto& argument : arguments)
    if (argument == "--help" || argument == "-h") {
      std::cout << lrhost::cli::lerobot_train_help();
      return 0;
    }
  auto plan =
      lrhost::cli::plan_lerobot_train(arguments, lrhost::cli::default_accelerate_config([](const std::string& name) {
                                        const char* value = std::getenv(name.c_str());
                                        return value ? std::optional<std::string>(value) : std::nullopt;
                                      }));
  // accelerate's gpu_ids (--gpu_ids or the config file's): before anything counts the GPUs; the
  // ranks inherit it.
  if (plan.cuda_visible_devices) setenv("CUDA_VISIBLE_DEVICES", plan.cuda_visible_devices->c_str(), 1);
  if (plan.all_gpus) {
    // accelerate's --multi_gpu without --num_processes: every visible GPU.
    int visible = static_cast<int>(torch::cuda::device_count());
    if (visible < 1)
      throw lrhost::util::ConfigError(
          "lerobot-train: --multi_gpu without --num_processes uses every GPU, and "
          "none is visible",
          "give --num_processes=N (CPU ranks) or drop --multi_gpu");
    plan.gpus = visible;
    plan.all_gpus = false;
  }
  for (const auto& line : plan.accelerate_config) std::fprintf(stderr, "lrhost: %s\n", line.c_str());
  std::fprintf(stderr, "lrhost: lerobot-train maps to:\n  %s\n", plan.equivalent_command().c_str());
  for (const auto& note : plan.notes) std::fprintf(stderr, "lrhost: note: %s\n", note.c_str());
  for (const auto& warning : plan.warnings) std::fprintf(stderr, "lrhost: WARNING: %s\n", warning.c_str());
  if (plan.dry_run) return 0;
  RecipeArguments args;
  args.verbose = plan.verbose;
  LaunchArguments launch;
  launch.nproc = plan.nproc;
  launch.gpus = plan.gpus;
  launch.device = plan.device;
  launch.overwrite = plan.overwrite;
  if (plan.master_port) launch.master_port = *plan.master_port;
  if (plan.resume_from) return resume(plan.resume_from->string(), plan.overrides, args, launch);
  launch.run_dir = plan.run_dir;
  args.recipe = plan.recipe;
  args.overrides = plan.overrides;
  return run(args, lrhost::cli::RecipeMode::run, &launch);
}

// For an argument CLI11 refused: the hint when it is a lerobot-train flag (`--batch_size=4`). Only the
// arguments CLI11's message names are looked at: a flag the subcommand took is not the problem.
std::string lerobot_flag_hint(const std::vector<std::string>& arguments, const std::string& refusal) {
  for (const auto& argument : arguments) {
    const std::string flag = argument.substr(0, argument.find('='));
    if (refusal.find(flag) == std::string::npos) continue;
    if (auto hint = lrhost::cli::lerobot_style_flag_hint(argument); !hint.empty()) return hint;
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything is printed: a rank stopped by a signal must not take its last lines with it.
  lrhost::util::line_buffer_stdout();
  CLI::App app{"lrhost: train robot-learning policies from Lua recipes", "lrhost"};
  app.require_subcommand(0, 1);
  bool show_version = false;
  app.add_flag("--version", show_version,
               "print versions of lrhost, LibTorch, LuaJIT, CUDA and NCCL, and the allocator");

  RecipeArguments run_args, show_args;
  int show_nproc = 0, show_gpus = 0, show_nnodes = 1;
  LaunchArguments launch_args;
  auto* run_command = app.add_subcommand("run", "run a recipe (the default: `lrhost RECIPE.lua ...`)");
  add_recipe_arguments(*run_command, run_args);
  add_launch_arguments(*run_command, launch_args);
  auto* show_command = app.add_subcommand("show", "print the recipe's resolved config as JSON and exit");
  add_recipe_arguments(*show_command, show_args);
  // Planning only: nothing starts, but lr.config's derive function sees this world size.
  show_command->add_option("--nproc", show_nproc, "plan for N ranks per node (e.g. to see the scaled lr)")
      ->check(lrhost::cli::positive_number);
  show_command->add_option("--gpus", show_gpus, "plan for N GPU ranks per node")->check(lrhost::cli::positive_number);
  show_command->add_option("--nnodes", show_nnodes, "plan for this many nodes")->check(lrhost::cli::positive_number);
  // Taken so that a `run` command line can be shown as it is; the plan is made on the CPU and counts
  // bytes per rank, which the device does not change.
  std::string show_device = "auto";
  show_command->add_option("--device", show_device, "as for run (auto, cpu, cuda); the plan is the same on each")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  show_command->add_flag("--json", show_args.json,
                         "print only JSON on stdout: {\"config\": ..., \"memory_plan\": ...}");
  std::string show_gpu_memory;
  show_command->add_option("--gpu-memory", show_gpu_memory,
                           "with this much memory per GPU (e.g. 24GiB, 80GB; a list: 24GiB,80GiB): the largest batch "
                           "per rank that fits, for each strategy of the plan");

  // Only for the help text: `lrhost lerobot-train ...` is parsed by the front door before CLI11.
  app.add_subcommand("lerobot-train",
                     "run a LeRobot `lerobot-train` / `accelerate launch` command line as typed, on the shipped "
                     "recipe of its policy type (`lrhost lerobot-train --help` lists the flags; docs/lerobot.md)");
  lrhost::cli::DatasetCommand dataset_command;
  lrhost::cli::add_dataset_command(app, dataset_command);
  lrhost::cli::CheckpointCommand checkpoint_command;
  lrhost::cli::add_checkpoint_command(app, checkpoint_command);
  lrhost::cli::TokenizeCommand tokenize_command;
  lrhost::cli::add_tokenize_command(app, tokenize_command);
  lrhost::cli::PlotCommand plot_command;
  lrhost::cli::add_plot_command(app, plot_command);
  // `resume` takes run's flags; the recipe and overrides come from the checkpoint.
  RecipeArguments resume_args;
  LaunchArguments resume_launch;
  std::string resume_from;
  std::vector<std::string> resume_overrides;
  auto* resume_command = app.add_subcommand(
      "resume",
      "continue a training run: re-runs the recipe copy stored in the checkpoint with its overrides, "
      "output_dir and resume=true (launch flags as for run)");
  resume_command->add_option("checkpoint", resume_from, "output dir, checkpoints dir or step dir")->required();
  resume_command->add_option("overrides", resume_overrides,
                             "key=value overrides applied after the stored ones (e.g. steps=40000 to train longer)");
  resume_command->add_option("--threads", resume_args.threads, "CPU threads for LibTorch ops")
      ->check(lrhost::cli::positive_number);
  resume_command->add_flag("-v,--verbose", resume_args.verbose, "debug-level logging");
  add_launch_arguments(*resume_command, resume_launch);

  // `eval` runs the shipped recipes/eval_policy.lua on a checkpoint (launch flags as for run).
  RecipeArguments eval_args;
  LaunchArguments eval_launch;
  std::string eval_checkpoint;
  int eval_episodes = 50, eval_videos = 4, eval_max_steps = 80;
  std::string eval_weights = "live";
  std::string eval_dataset_name;
  auto* eval_command = app.add_subcommand(
      "eval",
      "closed-loop evaluation on the built-in pushing task: success rate, returns and rollout videos "
      "in <run>/eval/<step>/ (recipes/eval_policy.lua; launch flags as for run)");
  eval_command->add_option("checkpoint", eval_checkpoint, "run folder, checkpoints/<step> folder or pretrained folder")
      ->required();
  eval_command->add_option("--episodes", eval_episodes, "episodes to roll out (split across the ranks)")
      ->check(lrhost::cli::positive_number);
  eval_command->add_option("--videos", eval_videos, "rollouts of the first episodes saved as mp4")
      ->check(lrhost::cli::non_negative_number);
  eval_command->add_option("--max-steps", eval_max_steps, "steps before an episode is cut off")
      ->check(lrhost::cli::positive_number);
  eval_command
      ->add_option("--weights", eval_weights,
                   "live: the checkpoint's weights; ema: its EMA weights (pretrained_model_ema/, ema.enable=true)")
      ->check(CLI::IsMember({"live", "ema"}));
  eval_command->add_option("--dataset-name", eval_dataset_name,
                           "a policy trained on a mixture with dataset.stats=per_dataset: normalize with this "
                           "dataset's stats (its name in dataset.mixture)");
  eval_command->add_option("--threads", eval_args.threads, "CPU threads for LibTorch ops")
      ->check(lrhost::cli::positive_number);
  eval_command->add_flag("-v,--verbose", eval_args.verbose, "debug-level logging");
  add_launch_arguments(*eval_command, eval_launch);

  std::vector<std::string> arguments(argv + 1, argv + argc);
  // lerobot-train's flags are free-form (--policy.<any field>): parsed by the front door, not CLI11.
  if (!arguments.empty() && arguments[0] == "lerobot-train") {
    try {
      return lerobot_train({arguments.begin() + 1, arguments.end()});
    } catch (const std::exception& error) {
      std::string text = lrhost::util::describe(error);
      std::fprintf(stderr, "lrhost: error: %s\n", text.c_str());
      lrhost::launch::record_error_for_launcher(text);
      return 2;
    }
  }
  // `lrhost [flags] RECIPE.lua ...` is shorthand for `lrhost run [flags] RECIPE.lua ...`.
  if (!arguments.empty() && arguments[0] != "run" && arguments[0] != "show" && arguments[0] != "dataset" &&
      arguments[0] != "checkpoint" && arguments[0] != "resume" && arguments[0] != "tokenize" &&
      arguments[0] != "plot" && arguments[0] != "eval" && arguments[0] != "--version" && arguments[0] != "--help" &&
      arguments[0] != "-h")
    arguments.insert(arguments.begin(), "run");
  const std::vector<std::string> given = arguments;
  std::reverse(arguments.begin(), arguments.end());  // CLI11 takes them last-first

  try {
    app.parse(arguments);
  } catch (const CLI::ParseError& error) {
    // `lrhost RECIPE --batch_size=4`: say what lrhost takes instead of CLI11's bare refusal.
    if (auto hint = lerobot_flag_hint(given, error.what()); !hint.empty() && error.get_exit_code() != 0) {
      std::fprintf(stderr, "lrhost: error: %s\n  hint: %s\n", error.what(), hint.c_str());
      return 2;
    }
    return app.exit(error);
  }
  try {
    if (show_version) {
      std::cout << lrhost::cli::version_report(lrhost::cli::recipe_engine_version());
      return 0;
    }
    if (run_command->parsed()) return run(run_args, lrhost::cli::RecipeMode::run, &launch_args);
    if (show_command->parsed()) {
      if (show_nproc > 0 && show_gpus > 0) throw lrhost::util::ConfigError("show: give --nproc or --gpus, not both");
      for (std::size_t start = 0; start < show_gpu_memory.size();) {  // SIZE[,SIZE...]
        const auto comma = std::min(show_gpu_memory.find(',', start), show_gpu_memory.size());
        show_args.gpu_memory_bytes.push_back(
            lrhost::util::parse_memory_size(show_gpu_memory.substr(start, comma - start), "show --gpu-memory"));
        start = comma + 1;
      }
      return run(show_args, lrhost::cli::RecipeMode::show, nullptr, std::max({show_nproc, show_gpus, 1}) * show_nnodes);
    }
    if (int code = lrhost::cli::run_dataset_command(dataset_command); code >= 0) return code;
    if (int code = lrhost::cli::run_checkpoint_command(checkpoint_command); code >= 0) return code;
    if (int code = lrhost::cli::run_tokenize_command(tokenize_command); code >= 0) return code;
    if (int code = lrhost::cli::run_plot_command(plot_command); code >= 0) return code;
    if (eval_command->parsed()) {
      eval_args.recipe = (lrhost::util::shipped_recipes_dir() / "eval_policy.lua").string();
      std::string checkpoint = std::filesystem::absolute(eval_checkpoint).lexically_normal().string();
      eval_args.overrides = {"checkpoint=" + checkpoint,
                             "episodes=" + std::to_string(eval_episodes),
                             "videos=" + std::to_string(eval_videos),
                             "max_steps=" + std::to_string(eval_max_steps),
                             "weights=" + eval_weights,
                             "dataset_name=" + eval_dataset_name};
      // Logs go to the evaluated run's folder (<run>/eval/logs/<time>_eval/), not ./outputs/lrhost/.
      lrhost::cli::choose_eval_run_dir(eval_launch.run_dir, checkpoint);
      return run(eval_args, lrhost::cli::RecipeMode::run, &eval_launch);
    }
    if (resume_command->parsed()) return resume(resume_from, resume_overrides, resume_args, resume_launch);
    std::cout << app.help();
    return 2;
  } catch (const std::exception& error) {
    std::string text = lrhost::util::describe(error);
    std::fprintf(stderr, "lrhost: error: %s\n", text.c_str());
    lrhost::launch::record_error_for_launcher(text);
    try {
      lrhost::dist::shutdown_process_comm();
    } catch (const std::exception&) {
      // The error above is what matters; the process exits next.
    }
    return 1;
  }
}
