// Entry point of the lrhost binary: parses the command line and dispatches to a subcommand.
//   lrhost RECIPE.lua [key=value ...]        same as `lrhost run`
//   lrhost run RECIPE.lua [key=value ...]    run a recipe
//   lrhost show RECIPE.lua [key=value ...]   print the resolved config without training
//   lrhost --version
#include <CLI/CLI.hpp>
#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <iostream>

#include "host/cli/recipe_request.hpp"
#include "host/cli/version.hpp"
#include "host/util/error.hpp"
#include "host/util/log.hpp"

namespace {

struct RecipeArguments {
  std::string recipe;
  std::vector<std::string> overrides;
  int threads = 0;
  bool verbose = false;
};

void add_recipe_arguments(CLI::App& command, RecipeArguments& args) {
  command.add_option("recipe", args.recipe, "Lua recipe file")->required();
  command.add_option("overrides", args.overrides, "config overrides: key=value or a.b.c=value");
  command.add_option("--threads", args.threads, "CPU threads for LibTorch ops (default: LibTorch's choice)")
      ->check(CLI::PositiveNumber);
  command.add_flag("-v,--verbose", args.verbose, "debug-level logging");
}

int run(const RecipeArguments& args, lrhost::cli::RecipeMode mode) {
  lrhost::util::setup_logging({.rank = 0, .verbose = args.verbose, .log_dir = std::nullopt});
  if (args.threads > 0) {
    torch::set_num_threads(args.threads);
    torch::set_num_interop_threads(1);
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(args.recipe, ec)) {
    std::fprintf(stderr, "lrhost: error: recipe file '%s' not found\n", args.recipe.c_str());
    return 2;
  }
  return lrhost::cli::run_recipe({args.recipe, args.overrides, mode});
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"lrhost: train robot-learning policies from Lua recipes", "lrhost"};
  app.require_subcommand(0, 1);
  bool show_version = false;
  app.add_flag("--version", show_version, "print versions of lrhost, LibTorch, LuaJIT, CUDA and NCCL");

  RecipeArguments run_args, show_args;
  auto* run_command = app.add_subcommand("run", "run a recipe (the default: `lrhost RECIPE.lua ...`)");
  add_recipe_arguments(*run_command, run_args);
  auto* show_command = app.add_subcommand("show", "print the recipe's resolved config as JSON and exit");
  add_recipe_arguments(*show_command, show_args);

  // `lrhost RECIPE.lua ...` is shorthand for `lrhost run RECIPE.lua ...`.
  std::vector<std::string> arguments(argv + 1, argv + argc);
  if (!arguments.empty() && arguments[0][0] != '-' && arguments[0] != "run" && arguments[0] != "show")
    arguments.insert(arguments.begin(), "run");
  std::reverse(arguments.begin(), arguments.end());  // CLI11 takes them last-first

  try {
    app.parse(arguments);
  } catch (const CLI::ParseError& error) {
    return app.exit(error);
  }
  try {
    if (show_version) {
      std::cout << lrhost::cli::version_report();
      return 0;
    }
    if (run_command->parsed()) return run(run_args, lrhost::cli::RecipeMode::run);
    if (show_command->parsed()) return run(show_args, lrhost::cli::RecipeMode::show);
    std::cout << app.help();
    return 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "lrhost: error: %s\n", lrhost::util::describe(error).c_str());
    return 1;
  }
}
