// Fuzz target: meta/info.json of a LeRobot dataset (DatasetInfo::read), then what readers derive
// from it right away: the feature lookups and camera shapes.
#include "host/data/dataset_info.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace lrhost;
  const auto file = fuzz::scratch() / "meta" / "info.json";
  fuzz::write_bytes(file, data, size);
  fuzz::expect_clean([&] {
    data::DatasetInfo info = data::DatasetInfo::read(file);
    for (const auto& feature : info.features) (void)feature.item_shape();
    (void)info.to_json().dump();
  });
  return 0;
}
