// Fuzz target: a run's metrics.jsonl, read both ways the product reads it: read_metrics_jsonl
// (`lrhost plot`) and the JSONL sink reopening the file on resume, which drops the records at or
// after the resumed step and rewrites the file.
#include "host/metrics/jsonl_sink.hpp"
#include "host/metrics/metrics_file.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace lrhost;
  const auto file = fuzz::scratch() / "metrics.jsonl";
  fuzz::write_bytes(file, data, size);
  fuzz::expect_clean([&] {
    metrics::MetricsFile metrics = metrics::read_metrics_jsonl(file);
    (void)metrics.keys();
  });
  fuzz::expect_clean([&] {
    metrics::JsonlSink sink(file, /*first_step=*/3);
    sink.write(3, 0.0, {{"loss", 0.5}});
  });
  return 0;
}
