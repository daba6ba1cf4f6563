// The dataset subcommands; see dataset_command.hpp.
#include "host/cli/dataset_command.hpp"

#include <fmt/format.h>

#include <iostream>

#include "host/cli/number_checks.hpp"
#include "host/data/dataset_meta.hpp"
#include "host/data/dataset_verify.hpp"
#include "host/data/mixture/mixture_report.hpp"
#include "host/data/stats/quantile_augment.hpp"
#include "host/data/video/video_reader.hpp"
#include "host/util/error.hpp"
#include "host/util/strings.hpp"

namespace lrhost::cli {
namespace fs = std::filesystem;

namespace {
std::pair<uintmax_t, int> folder_size(const fs::path& folder) {
  uintmax_t bytes = 0;
  int files = 0;
  if (!fs::is_directory(folder)) return {0, 0};
  for (const auto& entry : fs::recursive_directory_iterator(folder))
    if (entry.is_regular_file()) bytes += entry.file_size(), ++files;
  return {bytes, files};
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

int print_info(const fs::path& root) {
  data::DatasetMeta meta = data::DatasetMeta::read(root);
  const data::DatasetInfo& info = meta.info;
  std::cout << fmt::format("dataset   {}\n", fs::absolute(root).string());
  std::cout << fmt::format("format    LeRobotDataset {}{}\n", info.codebase_version,
                           info.robot_type ? ", robot " + *info.robot_type : "");
  std::cout << fmt::format("episodes  {}   frames {}   fps {}   duration {:.1f} s   tasks {}\n", meta.episodes.size(),
                           info.total_frames, info.fps, static_cast<double>(info.total_frames) / info.fps,
                           meta.tasks.size());
  int64_t shortest = meta.episodes.front().length, longest = shortest;
  for (const auto& episode : meta.episodes)
    shortest = std::min(shortest, episode.length), longest = std::max(longest, episode.length);
  std::cout << fmt::format("lengths   {}..{} frames per episode\n", shortest, longest);
  std::cout << "features\n";
  for (const auto& feature : info.features)
    std::cout << fmt::format("  {:<32} {:<8} {}\n", feature.key, feature.dtype, shape_text(feature.shape));
  auto cameras = info.camera_keys();
  if (!cameras.empty()) std::cout << "cameras\n";
  for (const std::string& key : cameras) {
    const auto& feature = info.feature(key);
    if (feature.kind == data::FeatureKind::Image) {
      std::cout << fmt::format("  {:<32} PNG images in the data parquet, {}x{}\n", key, feature.shape[1],
                               feature.shape[0]);
      continue;
    }
    fs::path file = meta.video_file(meta.episodes.front(), key);
    data::VideoStreamInfo stream = data::probe_video(file);
    std::cout << fmt::format("  {:<32} {} {} {}x{} @ {:.3g} fps\n", key, stream.codec, stream.pix_fmt, stream.width,
                             stream.height, stream.fps);
  }
  for (std::size_t task = 0; task < meta.tasks.size() && task < 10; ++task)
    std::cout << fmt::format("task {:<4} {}\n", task, meta.tasks[task]);
  if (meta.tasks.size() > 10) std::cout << fmt::format("          ... {} more tasks\n", meta.tasks.size() - 10);
  std::cout << "files\n";
  for (const char* folder : {"data", "videos", "meta", "images"}) {
    auto [bytes, files] = folder_size(root / folder);
    if (files) std::cout << fmt::format("  {:<8} {:>5} files  {:>10}\n", folder, files, util::human_bytes(bytes));
  }
  std::cout << fmt::format(
      "stats     {}\n", meta.stats ? "meta/stats.json (" + std::to_string(meta.stats->size()) + " features)" : "none");
  return 0;
}
// A mixture (@file.json or its JSON text): its datasets with their shares, and the features it serves.
int print_mixture_info(const std::string& mixture, const std::string& weighting, bool mixed_fps) {
  data::MixtureDataset dataset(data::mixture_spec_from_json(nlohmann::json(mixture), weighting, "pooled", mixed_fps),
                               data::DatasetOptions{.keys = std::vector<std::string>{}});
  for (const std::string& line : data::mixture_report(dataset)) std::cout << line << "\n";
  std::cout << fmt::format("episodes  {}   tasks {}\n", dataset.meta().episodes.size(), dataset.meta().tasks.size());
  std::cout << "features (the datasets' union, in the policy's names)\n";
  for (const auto& feature : dataset.meta().info.features) {
    const bool partial = dataset.partial_cameras().count(feature.key) > 0;
    std::cout << fmt::format("  {:<32} {:<8} {}{}\n", feature.key, feature.dtype, shape_text(feature.shape),
                             partial ? "  (not in every dataset: an empty camera where missing)" : "");
  }
  return 0;
}

// Prints the summary and every problem; exit code 1 when there is any.
int print_verify(const fs::path& root, double tolerance_s) {
  data::VerifyReport report = data::verify_dataset(root, {.tolerance_s = tolerance_s});
  for (const std::string& note : report.notes) std::cout << "note: " << note << "\n";
  for (const data::VerifyProblem& problem : report.problems)
    std::cout << fmt::format("problem: {}: {}\n", problem.file.string(), problem.what);
  std::cout << fmt::format(
      "verified {}: {} parquet files ({} rows), {} video files ({} frames decoded), {} images; "
      "{} problem{}\n",
      fs::absolute(root).string(), report.parquet_files, report.rows, report.video_files, report.video_frames,
      report.images, report.problems.size(), report.problems.size() == 1 ? "" : "s");
  return report.ok() ? 0 : 1;
}
// Adds the quantile stats; exit code 0 also when they were already there (nothing to do).
int add_quantile_stats(const fs::path& root, bool overwrite) {
  data::QuantileAugmentResult result = data::augment_quantile_stats(root, overwrite, [](int64_t done, int64_t total) {
    if (done == total || done % 50 == 0) std::cout << fmt::format("episodes {}/{}\n", done, total) << std::flush;
  });
  if (!result.written) {
    std::cout << fmt::format("{} already has quantile statistics; nothing to do (--overwrite recomputes them)\n",
                             result.stats_file.string());
    return 0;
  }
  std::cout << fmt::format("wrote q01, q10, q50, q90, q99 of {} features to {}\n", result.features.size(),
                           result.stats_file.string());
  return 0;
}
}  // namespace

void add_dataset_command(CLI::App& app, DatasetCommand& command) {
  auto* dataset = app.add_subcommand("dataset", "create or inspect LeRobot datasets");
  dataset->require_subcommand(1);
  command.synth = dataset->add_subcommand("synth", "write the built-in 2-D pushing dataset (LeRobot v3.0)");
  auto& options = command.synth_options;
  command.synth->add_option("--out", command.out, "output folder (must not exist or be empty)")->required();
  command.synth->add_option("--episodes", options.episodes, "number of episodes")
      ->capture_default_str()
      ->check(positive_number);
  command.synth->add_option("--fps", options.fps, "frames per second")->capture_default_str()->check(positive_number);
  command.synth->add_option("--image-size", options.image_size, "camera width and height in pixels (even)")
      ->capture_default_str();
  command.synth->add_option("--max-length", options.max_episode_length, "longest episode in frames")
      ->capture_default_str();
  command.synth->add_option("--seed", options.seed, "random seed of the start positions")->capture_default_str();
  command.synth->add_flag("--images", options.cameras_as_images, "store cameras as PNG image columns instead of mp4");
  command.synth->add_flag("--wrist", options.second_camera, "add a second camera (observation.images.wrist)");
  command.synth->add_option("--extra-action-dims", options.extra_action_dims,
                            "action dimensions after (vx, vy): a smooth signal, for mixtures of action widths");
  command.synth->add_option("--vcodec", command.vcodec, "video encoder (default libsvtav1, falling back to libx264)");
  command.info = dataset->add_subcommand(
      "info", "describe a dataset (features, episodes, cameras, file sizes) or a mixture (@mix.json or its JSON text)");
  command.info
      ->add_option("path", command.path,
                   "dataset root (the folder holding meta/info.json), or a mixture: @mix.json or '[{\"root\": ...}]'")
      ->required();
  command.info->add_option("--weighting", command.weighting, "a mixture's dataset.weighting: frames, given, balanced");
  command.info->add_flag("--mixed-fps", command.mixed_fps, "a mixture's dataset.mixed_fps");
  command.verify = dataset->add_subcommand(
      "verify",
      "read every parquet, image and video file and check it against the metadata; lists every problem "
      "and exits non-zero when there is any");
  command.verify->add_option("path", command.path, "dataset root (the folder holding meta/info.json)")->required();
  command.verify->add_option("--tolerance-s", command.tolerance_s, "how far a video frame may lie from its timestamp")
      ->capture_default_str()
      ->check(non_negative_number);
  command.stats = dataset->add_subcommand(
      "stats",
      "add the quantile statistics (q01, q10, q50, q90, q99) that QUANTILES and QUANTILE10 normalization "
      "need to meta/stats.json, as LeRobot's augment_dataset_quantile_stats; other stats are kept");
  command.stats->add_option("path", command.path, "dataset root (the folder holding meta/info.json)")->required();
  command.stats->add_flag("--overwrite", command.overwrite, "recompute quantiles that are already present");
}

int run_dataset_command(const DatasetCommand& command) {
  if (command.synth && command.synth->parsed()) {
    data::SyntheticPushOptions options = command.synth_options;
    if (!command.vcodec.empty()) options.video.codec = command.vcodec;
    int64_t frames = data::write_synthetic_push(command.out, options);
    std::cout << fmt::format("wrote {} episodes, {} frames to {}\n", options.episodes, frames, command.out);
    return 0;
  }
  if (command.info && command.info->parsed()) {
    const bool mixture = command.path.starts_with("@") || command.path.starts_with("[");
    if (mixture) return print_mixture_info(command.path, command.weighting, command.mixed_fps);
    if (!command.weighting.empty() || command.mixed_fps)
      throw util::ConfigError("--weighting and --mixed-fps describe a mixture; " + command.path +
                              " is one dataset (give @mix.json or the mixture's JSON text)");
    return print_info(command.path);
  }
  if (command.verify && command.verify->parsed()) return print_verify(command.path, command.tolerance_s);
  if (command.stats && command.stats->parsed()) return add_quantile_stats(command.path, command.overwrite);
  return -1;
}

}  // namespace lrhost::cli
