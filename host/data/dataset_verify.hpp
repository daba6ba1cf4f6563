// `lrhost dataset verify`: reads every file of a LeRobot dataset (v3.0 or v2.1) end to end and
// checks it against the metadata, collecting every problem instead of stopping at the first, so that
// one run names all the damage of a half-copied or hand-edited dataset. Checked: info.json against
// the episode and task tables; each data parquet opens, its numeric columns have the dtype and shape
// info.json declares, its rows per episode, global `index` range, frame_index and timestamp spacing
// match meta/episodes; every PNG image cell decodes to the declared shape; every video file decodes
// packet by packet to its end, has the declared frame size, and holds a frame within tolerance_s of
// each of its episodes' frame times (from_timestamp + timestamp); the statistics file parses.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace lrhost::data {

struct VerifyOptions {
  double tolerance_s = 1e-4;  // LeRobot's default frame-time tolerance
};

struct VerifyProblem {
  std::filesystem::path file;  // the file at fault (meta/info.json for table mismatches)
  std::string what;
};

struct VerifyReport {
  int64_t parquet_files = 0, video_files = 0;  // files opened and scanned
  int64_t rows = 0;                            // data rows read
  int64_t video_frames = 0;                    // frames decoded from videos
  int64_t images = 0;                          // PNG cells decoded
  std::vector<VerifyProblem> problems;
  std::vector<std::string> notes;  // oddities that do not break reading (e.g. extra video frames)
  bool ok() const { return problems.empty(); }
};

// Never throws for a damaged dataset: whatever cannot be read becomes a problem (a missing or
// unreadable meta folder is one problem, after which nothing else can be located).
VerifyReport verify_dataset(const std::filesystem::path& root, const VerifyOptions& options = {});

}  // namespace lrhost::data
