// Fuzz target: the v3.0 episode table, meta/episodes/chunk-000/file-000.parquet, read through
// DatasetMeta::read (Arrow/Parquet decoding, column types, list-of-string tasks, the consistency
// checks against info.json). info.json and tasks.parquet are the seed dataset's, fixed.
#include <cstdlib>

#include "host/data/dataset_meta.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {
// The seed dataset's other meta files, found next to this target's corpus (see run.sh).
std::filesystem::path fixed_files() {
  const char* dir = std::getenv("LRHOST_FUZZ_META");
  if (dir == nullptr) throw std::runtime_error("set LRHOST_FUZZ_META to tests/fuzz/meta");
  return dir;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace lrhost;
  const auto root = fuzz::scratch() / "dataset";
  static const bool prepared = [&] {
    std::filesystem::create_directories(root / "meta");
    for (const char* name : {"info.json", "tasks.parquet"})
      std::filesystem::copy_file(fixed_files() / name, root / "meta" / name,
                                 std::filesystem::copy_options::overwrite_existing);
    return true;
  }();
  (void)prepared;
  fuzz::write_bytes(root / "meta" / "episodes" / "chunk-000" / "file-000.parquet", data, size);
  fuzz::expect_clean([&] { (void)data::DatasetMeta::read_tables(root).consistency_problems(); });
  return 0;
}
