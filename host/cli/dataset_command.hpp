// `lrhost dataset synth` (write the built-in pushing dataset), `lrhost dataset info` (describe any
// LeRobot dataset: features, episodes, frames, fps, cameras and codecs, file sizes; or a mixture of
// them: shares, the cameras each lacks, the features it serves) and
// `lrhost dataset verify` (read every file and check it against the metadata; host/data/dataset_verify)
// and `lrhost dataset stats` (add the quantile stats that QUANTILES normalization needs to
// meta/stats.json; host/data/stats/quantile_augment).
#pragma once
#include <CLI/CLI.hpp>

#include <string>

#include "host/data/synthetic_push.hpp"

namespace lrhost::cli {

struct DatasetCommand {
  CLI::App* synth = nullptr;
  CLI::App* info = nullptr;
  CLI::App* verify = nullptr;
  CLI::App* stats = nullptr;
  bool overwrite = false;  // stats: recompute quantiles that are already there
  std::string out, vcodec, path;
  std::string weighting;      // info of a mixture: dataset.weighting
  bool mixed_fps = false;     // info of a mixture: dataset.mixed_fps
  double tolerance_s = 1e-4;  // verify: LeRobot's default
  data::SyntheticPushOptions synth_options;
};

void add_dataset_command(CLI::App& app, DatasetCommand& command);
// Runs whichever subcommand was parsed; returns the exit code, or -1 when none of them was.
int run_dataset_command(const DatasetCommand& command);

}  // namespace lrhost::cli
