// Fuzz target: meta/stats.json (read_stats_json): nested lists of numbers per feature and stat,
// turned into tensors, then written back as LeRobot writes them.
#include "host/data/stats/feature_stats.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace lrhost;
  const auto file = fuzz::scratch() / "meta" / "stats.json";
  fuzz::write_bytes(file, data, size);
  fuzz::expect_clean([&] {
    data::DatasetStats stats = data::read_stats_json(file);
    for (const auto& [key, feature] : stats) (void)data::stats_to_json(feature).dump();
  });
  return 0;
}
