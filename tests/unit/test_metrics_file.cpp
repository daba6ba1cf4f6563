// The metrics.jsonl reader (host/metrics/metrics_file.*): rows with their steps and numeric values, keys
// absent on some lines, a cut last line (training still writing it) left out, a bad line before the
// last an error naming file and line, non-numeric values skipped with one warning per key.
#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "host/metrics/metrics_file.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

using lrhost::test::contains;

namespace fs = std::filesystem;
using lrhost::metrics::read_metrics_jsonl;
using lrhost::test::TempDir;

namespace {

fs::path write_file(const TempDir& dir, const std::string& text) {
  fs::path file = dir / "metrics.jsonl";
  std::ofstream(file, std::ios::binary) << text;
  return file;
}

std::string error_of(const fs::path& file) {
  try {
    read_metrics_jsonl(file);
  } catch (const lrhost::util::Error& error) {
    return error.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("metrics.jsonl: rows, steps, numeric values and keys absent on some lines") {
  TempDir dir("metrics");
  auto file = write_file(dir,
                         "{\"step\": 50, \"time\": 1764049200.123, \"loss\": 0.81, \"lr\": 1e-05}\n"
                         "{\"step\": 100, \"time\": 1764049210.5, \"loss\": 0.5, \"eval/success_rate\": 0.4}\n"
                         "\n"
                         "{\"step\": 150.0, \"loss\": 0.25}\n");
  auto metrics = read_metrics_jsonl(file);
  REQUIRE(metrics.rows.size() == 3);
  CHECK(metrics.rows[0].step == 50);
  CHECK(metrics.rows[0].line == 1);
  CHECK(metrics.rows[0].values.at("loss") == doctest::Approx(0.81));
  CHECK(metrics.rows[0].values.at("lr") == doctest::Approx(1e-5));
  CHECK(metrics.rows[0].values.at("time") == doctest::Approx(1764049200.123));
  CHECK(metrics.rows[0].values.count("step") == 0);
  CHECK(metrics.rows[0].values.count("eval/success_rate") == 0);
  CHECK(metrics.rows[1].values.at("eval/success_rate") == doctest::Approx(0.4));
  CHECK(metrics.rows[2].step == 150);  // a float step with a whole value is accepted
  CHECK(metrics.rows[2].line == 4);    // blank lines are skipped but counted
  CHECK(metrics.keys() == std::vector<std::string>{"eval/success_rate", "loss", "lr", "time"});
  CHECK(metrics.has_key("eval/success_rate"));
  CHECK_FALSE(metrics.has_key("l1_loss"));
  CHECK(metrics.warnings.empty());
  CHECK_FALSE(metrics.partial_last_line);
}

TEST_CASE("metrics.jsonl: a cut last line is left out silently, with or without a newline") {
  TempDir dir("metrics");
  for (const std::string& tail : {std::string("{\"step\": 150, \"lo"), std::string("{\"step\": 150, \"loss\": 0.\n"),
                                  std::string("{\"step\": 150, \"loss\": 0.2\n\n")}) {
    CAPTURE(tail);
    auto file = write_file(dir, "{\"step\": 50, \"loss\": 0.8}\n{\"step\": 100, \"loss\": 0.5}\n" + tail);
    auto metrics = read_metrics_jsonl(file);
    CHECK(metrics.rows.size() == 2);
    CHECK(metrics.partial_last_line);
    CHECK(metrics.warnings.empty());
  }
  // The last line complete but without its newline is a normal row.
  auto file = write_file(dir, "{\"step\": 50, \"loss\": 0.8}\n{\"step\": 100, \"loss\": 0.5}");
  auto metrics = read_metrics_jsonl(file);
  CHECK(metrics.rows.size() == 2);
  CHECK_FALSE(metrics.partial_last_line);
}

TEST_CASE("metrics.jsonl: a bad line before the last is an error naming file and line") {
  TempDir dir("metrics");
  auto file = write_file(dir, "{\"step\": 50, \"loss\": 0.8}\n{\"step\": 100, \"lo\n{\"step\": 150, \"loss\": 0.2}\n");
  std::string error = error_of(file);
  CHECK_MESSAGE(contains(error, file.string() + ":2: not valid JSON"), error);

  file = write_file(dir, "{\"step\": 50}\n[1, 2]\n{\"step\": 150}\n");
  error = error_of(file);
  CHECK_MESSAGE(contains(error, ":2: expected a JSON object, got array"), error);
}

TEST_CASE("metrics.jsonl: step must be present and a whole number >= 0, even on the last line") {
  TempDir dir("metrics");
  auto file = write_file(dir, "{\"step\": 50, \"loss\": 0.8}\n{\"loss\": 0.5}\n");
  std::string error = error_of(file);
  CHECK_MESSAGE(contains(error, ":2: no \"step\" key"), error);
  for (std::string step : {"1.5", "-1", "\"50\"", "null"}) {
    CAPTURE(step);
    file = write_file(dir, "{\"step\": " + step + ", \"loss\": 0.8}\n");
    error = error_of(file);
    CHECK_MESSAGE(contains(error, ":1: \"step\" must be a whole number >= 0, got " + step), error);
  }
}

TEST_CASE("metrics.jsonl: non-numeric values are skipped with one warning per key") {
  TempDir dir("metrics");
  auto file = write_file(dir,
                         "{\"step\": 1, \"loss\": null, \"note\": \"warmup\"}\n"
                         "{\"step\": 2, \"loss\": 0.5, \"note\": \"x\"}\n"
                         "{\"step\": 3, \"loss\": null, \"ok\": true}\n");
  auto metrics = read_metrics_jsonl(file);
  REQUIRE(metrics.rows.size() == 3);
  CHECK(metrics.rows[0].values.empty());
  CHECK(metrics.rows[1].values.size() == 1);
  CHECK(metrics.rows[1].values.at("loss") == doctest::Approx(0.5));
  REQUIRE(metrics.warnings.size() == 3);  // loss, note, ok: each once
  CHECK_MESSAGE(contains(metrics.warnings[0], ":1: \"loss\" is null, not a number"), metrics.warnings[0]);
  CHECK_MESSAGE(contains(metrics.warnings[1], ":1: \"note\" is a string, not a number"), metrics.warnings[1]);
  CHECK_MESSAGE(contains(metrics.warnings[2], ":3: \"ok\" is true, not a number"), metrics.warnings[2]);
}

TEST_CASE("metrics.jsonl: an empty file has no rows; a missing file is an IoError naming it") {
  TempDir dir("metrics");
  auto file = write_file(dir, "");
  CHECK(read_metrics_jsonl(file).rows.empty());
  file = write_file(dir, "{\"step\": 1, \"lo");  // only a cut line: no rows either
  auto metrics = read_metrics_jsonl(file);
  CHECK(metrics.rows.empty());
  CHECK(metrics.partial_last_line);
  CHECK_THROWS_AS(read_metrics_jsonl(dir / "absent.jsonl"), lrhost::util::IoError);
  CHECK_MESSAGE(contains(error_of(dir / "absent.jsonl"), "absent.jsonl"), error_of(dir / "absent.jsonl"));
}
