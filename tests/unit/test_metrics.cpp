// Unit tests of host/metrics and the status line: reduction rules, the training meter's windows and
// progress text, the evaluation progress text, metrics.jsonl (resume without duplicated steps, partial lines, errors)
// and the fan-out of a logged record.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "host/metrics/eval_progress.hpp"
#include "host/metrics/jsonl_sink.hpp"
#include "host/metrics/metric_reduction.hpp"
#include "host/metrics/metrics_log.hpp"
#include "host/metrics/recipe_options.hpp"
#include "host/metrics/training_meter.hpp"
#include "host/util/error.hpp"
#include "host/util/status_line.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using lrhost::metrics::Reduction;
using lrhost::metrics::reduction_for;

namespace {
std::vector<nlohmann::json> read_records(const fs::path& path) {
  std::vector<nlohmann::json> records;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) records.push_back(nlohmann::json::parse(line));
  return records;
}

std::string read_all(std::FILE* file) {
  std::fflush(file);
  std::rewind(file);
  std::string text;
  char buffer[256];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, file)) text.append(buffer, n);
  return text;
}

struct RecordingSink final : lrhost::metrics::MetricsSink {
  std::vector<std::pair<int64_t, std::map<std::string, double>>> records;
  std::vector<std::string> texts;
  void write(int64_t step, double wall_time, const std::map<std::string, double>& metrics) override {
    CHECK(wall_time > 1.7e9);  // seconds since the epoch, not a steady clock
    records.emplace_back(step, metrics);
  }
  void write_text(const std::string& tag, int64_t, const std::string& text, double) override {
    texts.push_back(tag + ":" + text);
  }
};
}  // namespace

TEST_CASE("metrics: reductions follow the metric's name") {
  CHECK((reduction_for("loss") == Reduction::mean));
  CHECK((reduction_for("l1_loss") == Reduction::mean));
  CHECK((reduction_for("eval/success_rate") == Reduction::mean));
  CHECK((reduction_for("step_s") == Reduction::max));
  CHECK((reduction_for("data_s") == Reduction::max));
  CHECK((reduction_for("step_time") == Reduction::max));
  CHECK((reduction_for("peak_rss_gib") == Reduction::max));
  CHECK((reduction_for("samples_per_s") == Reduction::sum));  // a rate, though it ends in _s
  CHECK((reduction_for("samples/s") == Reduction::sum));
  CHECK((reduction_for("episodes_count") == Reduction::sum));
  CHECK((reduction_for("loss_scale") == Reduction::mean));  // "_scale" is not "_s"
  CHECK(std::string(lrhost::metrics::reduction_name(Reduction::max)) == "max");
}

TEST_CASE("metrics: durations read as m:ss or h:mm:ss") {
  using lrhost::metrics::format_duration;
  CHECK(format_duration(0) == "0:00");
  CHECK(format_duration(59.4) == "0:59");
  CHECK(format_duration(61) == "1:01");
  CHECK(format_duration(3723) == "1:02:03");
  CHECK(format_duration(-1) == "?");
  CHECK(format_duration(NAN) == "?");
}

TEST_CASE("metrics: the meter charges time to the marked phases and reports per-step means") {
  lrhost::metrics::TrainingMeter meter({.total_steps = 10, .first_step = 1, .samples_per_step = 4});
  CHECK(meter.take_window().empty());  // no step ended yet
  for (int64_t step = 1; step <= 2; ++step) {
    meter.mark("data");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    meter.mark("forward");
    meter.mark("optimizer");
    meter.end_step(step);
  }
  auto window = meter.take_window();
  REQUIRE(window.count("data_s"));
  REQUIRE(window.count("forward_s"));
  REQUIRE(window.count("optimizer_s"));
  REQUIRE(window.count("step_s"));
  REQUIRE(window.count("samples_per_s"));
  CHECK(window.count("peak_rss_gib"));
  // The 20 ms sleeps land in "forward" (the phase that ends after them), per step.
  CHECK(window.at("forward_s") >= 0.019);
  CHECK(window.at("forward_s") > window.at("optimizer_s"));
  // Phases add up to the step (no time counted twice); samples/s = 4 per step over the step time.
  double phases = window.at("data_s") + window.at("forward_s") + window.at("optimizer_s");
  CHECK(phases == doctest::Approx(window.at("step_s")).epsilon(1e-9));
  CHECK(window.at("samples_per_s") == doctest::Approx(4.0 / window.at("step_s")).epsilon(1e-9));
  CHECK(meter.take_window().empty());  // a new window starts empty

  meter.set_last_loss(0.125);
  std::string text = meter.progress_text(2);
  CHECK(text.rfind("step 2/10 (20.0%) | ", 0) == 0);
  CHECK(text.find("steps/s") != std::string::npos);
  CHECK(text.find("samples/s") != std::string::npos);
  CHECK(text.find("elapsed 0:00") != std::string::npos);
  CHECK(text.find("ETA ") != std::string::npos);
  CHECK(text.find("loss 0.125") != std::string::npos);
  CHECK(meter.eta_s(10) == 0.0);
  CHECK(meter.eta_s(2) > 0.0);
}

TEST_CASE("metrics: tflops and mfu are the FLOPs done over the wall time, bounded by a clock of the test's own") {
  constexpr double kFlopsPerSample = 3e9, kPeak = 2e12;
  const auto before = std::chrono::steady_clock::now();
  lrhost::metrics::TrainingMeter meter(
      {.total_steps = 10, .samples_per_step = 4, .flops_per_sample = kFlopsPerSample, .peak_flops = kPeak});
  for (int64_t step = 1; step <= 2; ++step) {
    meter.mark("data");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    meter.mark("forward");
    meter.end_step(step);
  }
  const double outer = std::chrono::duration<double>(std::chrono::steady_clock::now() - before).count();
  auto window = meter.take_window();
  REQUIRE(window.count("tflops"));
  REQUIRE(window.count("mfu"));
  // 2 steps of 4 samples in at least the 40 ms slept and at most the time this test measured.
  const double done = kFlopsPerSample * 4 * 2;
  CHECK(window.at("tflops") * 1e12 <= done / 0.040);
  CHECK(window.at("tflops") * 1e12 >= done / outer);
  CHECK(window.at("mfu") == doctest::Approx(window.at("tflops") * 1e12 / kPeak).epsilon(1e-12));

  // Without a FLOP count neither figure; without a peak, tflops alone.
  lrhost::metrics::TrainingMeter uncounted({.total_steps = 10, .samples_per_step = 4});
  lrhost::metrics::TrainingMeter no_peak({.total_steps = 10, .samples_per_step = 4, .flops_per_sample = 1e9});
  for (auto* m : {&uncounted, &no_peak}) {
    m->mark("data");
    m->end_step(1);
  }
  auto plain = uncounted.take_window();
  CHECK_FALSE(plain.count("tflops"));
  CHECK_FALSE(plain.count("mfu"));
  auto rate_only = no_peak.take_window();
  CHECK(rate_only.count("tflops"));
  CHECK_FALSE(rate_only.count("mfu"));
}

TEST_CASE("metrics: the status line shows the loss logged at the last step, not the previous window's") {
  std::FILE* stream = std::tmpfile();
  REQUIRE(stream != nullptr);
  lrhost::util::StatusLine line(stream, true, 200);
  lrhost::metrics::TrainingMeter meter(
      {.total_steps = 4, .draw_status_line = true, .redraw_interval_s = 0, .status_line = &line});
  // The loop's order: end_step draws the line, then the step's log sets its loss (log_freq 2).
  for (int64_t step = 1; step <= 4; ++step) {
    meter.end_step(step);
    if (step % 2 == 0) meter.set_last_loss(step == 2 ? 0.75 : 0.125);
  }
  std::fflush(stream);
  std::rewind(stream);
  std::string drawn;
  for (int c = std::fgetc(stream); c != EOF; c = std::fgetc(stream)) drawn += static_cast<char>(c);
  meter.finish();  // erases the line: before the stream closes
  std::fclose(stream);
  const std::string last = drawn.substr(drawn.rfind("\r\033[K") + 4);
  CHECK(last.rfind("step 4/4 (100.0%)", 0) == 0);
  CHECK(last.find("loss 0.125") != std::string::npos);
}

TEST_CASE("metrics: evaluation progress counts episodes, successes so far and the time left") {
  // One process: exact counts; no ETA before the first episode.
  lrhost::metrics::EvalProgress one({.episodes = 4});
  CHECK(one.progress_text().rfind("episode 0/4 (0.0%) | success 0/0 | ", 0) == 0);
  CHECK(one.progress_text().find("ETA ?") != std::string::npos);
  one.episode_done(true);
  one.episode_done(false);
  one.episode_done(true);
  std::string text = one.progress_text();
  CHECK(text.rfind("episode 3/4 (75.0%) | success 2/3 (66.7%) | ", 0) == 0);
  CHECK(text.find("episodes/s | elapsed 0:00 | ETA 0:00") != std::string::npos);
  CHECK(text.find("on rank") == std::string::npos);

  // Rank 0 of 2 plays episodes 0, 2, 4 of 5: the job's count is estimated from its own, and its
  // last episode means the job is done; the successes are this rank's, and say so.
  lrhost::metrics::EvalProgress rank0({.episodes = 5, .rank = 0, .world_size = 2});
  CHECK(rank0.this_rank_episodes() == 3);
  rank0.episode_done(false);
  CHECK(rank0.progress_text().rfind("episode 2/5 (40.0%) | success 0/1 (0.0%) on rank 0 | ", 0) == 0);
  rank0.episode_done(true);
  rank0.episode_done(true);
  CHECK(rank0.progress_text().rfind("episode 5/5 (100.0%) | success 2/3 (66.7%) on rank 0 | ", 0) == 0);
  // Rank 1 of 2 plays episodes 1 and 3.
  CHECK(lrhost::metrics::EvalProgress({.episodes = 5, .rank = 1, .world_size = 2}).this_rank_episodes() == 2);
}

TEST_CASE("metrics: the status line redraws in place, stays one line and steps aside for log records") {
  std::FILE* file = std::tmpfile();
  REQUIRE(file != nullptr);
  lrhost::util::StatusLine line(file, /*enabled=*/true, /*width=*/21);
  line.show("step 1/10");
  line.show("step 2/10 and a text longer than the terminal");
  line.erase_for_log();
  std::fputs("a log record\n", file);
  line.redraw_after_log();
  line.clear();
  std::string out = read_all(file);
  CHECK(out ==
        "\r\033[Kstep 1/10\r\033[Kstep 2/10 and a text\r\033[Ka log record\n\r\033[Kstep 2/10 and a text\r\033[K");
  CHECK(out.find("longer") == std::string::npos);  // cut to 20 columns: never wraps
  std::fclose(file);

  std::FILE* off = std::tmpfile();
  lrhost::util::StatusLine disabled(off, /*enabled=*/false, 80);
  disabled.show("step 1/10");
  disabled.erase_for_log();
  disabled.redraw_after_log();
  disabled.clear();
  CHECK(read_all(off).empty());  // off a terminal nothing is drawn
  std::fclose(off);
}

TEST_CASE("metrics: metrics.jsonl holds one flushed record per logged step") {
  lrhost::test::TempDir scratch("metrics_write");
  const fs::path& dir = scratch.path;
  fs::path path = dir / "sub" / "metrics.jsonl";
  lrhost::metrics::JsonlSink sink(path, 1);
  CHECK_FALSE(fs::exists(path));  // opened on the first write
  sink.write(50, 1764049200.5, {{"loss", 0.25}, {"lr", 1e-5}, {"eval/success_rate", 0.5}});
  // Readable before the sink is closed: every line is flushed.
  std::string first_line;
  std::getline(std::ifstream(path) >> std::ws, first_line);
  CHECK(first_line == R"({"step":50,"time":1764049200.5,"eval/success_rate":0.5,"loss":0.25,"lr":1e-05})");
  auto records = read_records(path);
  sink.write(100, 1764049201.0, {{"loss", NAN}, {"grdn", INFINITY}});
  records = read_records(path);
  REQUIRE(records.size() == 2);
  CHECK(records[1]["loss"].is_null());  // JSON has no NaN
  CHECK(records[1]["grdn"].is_null());
  CHECK_THROWS_WITH_AS(sink.write(150, 0, {{"step", 1}}), doctest::Contains("metric name 'step' is reserved in"),
                       lrhost::util::ConfigError);
}

TEST_CASE("metrics: a resumed run continues metrics.jsonl without duplicated steps") {
  lrhost::test::TempDir scratch("metrics_resume");
  const fs::path& dir = scratch.path;
  fs::path path = dir / "metrics.jsonl";
  {
    lrhost::metrics::JsonlSink first_run(path, 1);
    for (int64_t step : {10, 20, 30, 40}) first_run.write(step, 1764049200.0, {{"loss", 1.0}});
  }
  {
    std::ofstream partial(path, std::ios::app);
    partial << R"({"step": 50, "loss)";  // the first run was killed mid-line
  }
  // The checkpoint was at step 20: the resumed run logs from step 21 on.
  lrhost::metrics::JsonlSink resumed(path, 21);
  resumed.write(30, 1764049300.0, {{"loss", 0.5}});
  auto records = read_records(path);
  REQUIRE(records.size() == 3);
  CHECK(records[0]["step"] == 10);
  CHECK(records[1]["step"] == 20);
  CHECK(records[2]["step"] == 30);
  CHECK(records[2]["loss"] == 0.5);  // the resumed run's value, not the interrupted run's
}

TEST_CASE("metrics: an unwritable metrics file is an error naming it") {
  lrhost::test::TempDir scratch("metrics_unwritable");
  const fs::path& dir = scratch.path;
  fs::path blocker = dir / "not_a_folder";
  std::ofstream(blocker) << "x";
  lrhost::metrics::JsonlSink sink(blocker / "metrics.jsonl", 1);
  CHECK_THROWS_WITH_AS(sink.write(1, 0, {{"loss", 1}}), doctest::Contains("not_a_folder"), lrhost::util::IoError);
}

TEST_CASE("metrics: a logged record reaches every sink") {
  lrhost::metrics::MetricsLog log;
  auto a = std::make_shared<RecordingSink>();
  auto b = std::make_shared<RecordingSink>();
  log.add_sink(a);
  log.add_sink(b);
  log.record(7, {{"loss", 0.5}}, "");
  log.record_text("config", 1, "{}");
  for (const auto& sink : {a, b}) {
    REQUIRE(sink->records.size() == 1);
    CHECK(sink->records[0].first == 7);
    CHECK(sink->records[0].second.at("loss") == 0.5);
    CHECK(sink->texts == std::vector<std::string>{"config:{}"});
  }
  CHECK(lrhost::metrics::format_metrics({{"b", 0.123456}, {"a", 2}}) == "a=2 b=0.1235");
}

TEST_CASE("recipe options: the training meter's and the evaluation progress's tables, checked") {
  using lrhost::metrics::read_eval_progress_options;
  using lrhost::metrics::read_training_meter_options;
  auto meter = read_training_meter_options(
      {{"total_steps", 10}, {"first_step", 4}, {"samples_per_step", 8}, {"flops_per_sample", 2.5e9}}, "meter");
  CHECK(meter.total_steps == 10);
  CHECK(meter.first_step == 4);
  CHECK(meter.samples_per_step == 8);
  CHECK(meter.flops_per_sample == 2.5e9);
  CHECK(read_training_meter_options({{"total_steps", 3}}, "meter").first_step == 1);
  auto meter_error = [](const nlohmann::json& table) {
    return lrhost::test::error_of<lrhost::util::ConfigError>([&] { read_training_meter_options(table, "meter"); });
  };
  CHECK(meter_error({{"first_step", 2}}).find("meter: 'total_steps' is required") == 0);
  CHECK(meter_error({{"total_steps", 3}, {"first_step", 0}}).find("'first_step' must be a positive integer") !=
        std::string::npos);
  CHECK(meter_error({{"total_steps", 3}, {"flops_per_sample", 0}}).find("'flops_per_sample' must be > 0") !=
        std::string::npos);
  CHECK(meter_error({{"total_steps", 3}, {"samples_per_step", -1}}).find("'samples_per_step' must be >= 0") !=
        std::string::npos);
  CHECK(meter_error({{"total_steps", 3}, {"totl", 1}}).find("meter: unknown option 'totl'") == 0);

  auto eval = read_eval_progress_options({{"episodes", 6}, {"log_lines", true}}, "eval");
  CHECK(eval.episodes == 6);
  CHECK(eval.log_lines);
  CHECK_FALSE(read_eval_progress_options({{"episodes", 1}}, "eval").log_lines);
  auto eval_error = [](const nlohmann::json& table) {
    return lrhost::test::error_of<lrhost::util::ConfigError>([&] { read_eval_progress_options(table, "eval"); });
  };
  CHECK(eval_error(nlohmann::json::object()).find("eval: 'episodes' is required") == 0);
  CHECK(eval_error({{"episodes", 0}}).find("'episodes' must be a positive integer, got 0") != std::string::npos);
  CHECK(eval_error({{"episodes", 2}, {"log_lines", 1}}).find("'log_lines' must be true or false") != std::string::npos);
}

TEST_CASE("recipe options: a metrics sink's first step") {
  using lrhost::metrics::read_sink_first_step;
  CHECK(read_sink_first_step(nlohmann::json::object(), "sink") == 1);
  CHECK(read_sink_first_step({{"first_step", 7}}, "sink") == 7);
  CHECK(lrhost::test::error_of<lrhost::util::ConfigError>([] {
          read_sink_first_step({{"first_step", 0}}, "sink");
        }).find("sink: 'first_step' must be a positive integer, got 0") == 0);
  CHECK(lrhost::test::error_of<lrhost::util::ConfigError>([] {
          read_sink_first_step({{"first", 2}}, "sink");
        }).find("did you mean 'first_step'") != std::string::npos);
}
