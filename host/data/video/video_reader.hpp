// Reading frames of a LeRobot camera video (mp4: AV1 through libdav1d, H.264, HEVC) by timestamp.
// LeRobot looks frames up by time, not index: for each query time it takes the decoded frame whose
// presentation time is nearest and fails when that distance exceeds a tolerance. VideoReader does
// the same as LeRobot's pyav backend (seek back to a keyframe, decode forward, pick the nearest), and
// keeps decoding forward across calls when the next query lies ahead, which is the common pattern of
// a loader worker walking through an episode. probe_video gives the stream facts that
// meta/info.json records for a video feature.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace lrhost::data {

struct VideoStreamInfo {
  std::string codec;    // canonical codec name, e.g. "av1", "h264", "hevc"
  std::string pix_fmt;  // e.g. "yuv420p"
  int width = 0, height = 0;
  double fps = 0;           // the stream's frame rate (r_frame_rate, else average)
  double duration_s = 0;    // stream duration, else container duration
  int64_t frame_count = 0;  // from the container; estimated from duration × fps when it has none
  bool has_audio = false;
};

// Facts of the first video stream of `file`. Throws util::IoError when the file is missing, cannot
// be parsed or has no video stream.
VideoStreamInfo probe_video(const std::filesystem::path& file);

struct VideoReaderOptions {
  // Decoder threads. A loader runs many workers, each with its own readers, so 1 is the default.
  int decoder_threads = 1;
  // Decoded frames (still in the stream's pixel format, reference-counted) kept after a call so that
  // a next call whose first query lies a little behind the decode position needs no seek.
  int retained_frames = 8;
  // Files without a seek index only: keep decoding forward (instead of seeking) when the next query
  // is at most this far ahead. With an index the decision compares against the keyframe a seek would
  // land on, which is exact.
  double continue_within_s = 1.0;
};

class VideoReader {  // one open file; not thread-safe (each loader worker owns its own)
 public:
  explicit VideoReader(const std::filesystem::path& file, VideoReaderOptions options = {});
  ~VideoReader();
  VideoReader(const VideoReader&) = delete;
  VideoReader& operator=(const VideoReader&) = delete;
  VideoReader(VideoReader&&) noexcept;
  VideoReader& operator=(VideoReader&&) noexcept;

  const VideoStreamInfo& info() const;
  const std::filesystem::path& path() const;

  // For each query time (seconds on the file's timeline, frame.time = pts × time_base; any order,
  // duplicates allowed) the decoded frame whose time is nearest (ties go to the earlier frame, like
  // argmin), as uint8 RGB [N,3,H,W], contiguous on the CPU. Throws util::DataError naming the file,
  // the query time, the nearest frame's time and tolerance_s when a distance exceeds tolerance_s;
  // util::IoError when the file cannot be read or decoded. found_times (optional) receives the chosen
  // frame times, one per query.
  torch::Tensor frames_at(std::span<const double> times_s, double tolerance_s,
                          std::vector<double>* found_times = nullptr);

  // Every frame of the stream decoded from its start, for `lrhost dataset verify`: the frame times in
  // output (presentation) order, and the read or decode error that ended the scan early (empty when
  // the stream decoded to its end). Leaves the reader usable: the next frames_at() seeks afresh.
  struct Scan {
    std::vector<double> frame_times;
    std::string error;
  };
  Scan scan_all_frames();

  // Counters for tests and benchmarks: seeks done and frames decoded since opening.
  int64_t seeks() const;
  int64_t frames_decoded() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lrhost::data
