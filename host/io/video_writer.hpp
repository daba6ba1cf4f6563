// Encoding one camera's frames into an mp4 file the way LeRobot's dataset writer does: AV1 through
// libsvtav1 with g=2, crf=30, preset 12, yuv420p, fast-decode=0 and movflags=faststart, falling back to
// libx264 when SVT-AV1 is unavailable or refuses the frame size. Frame k gets pts k with time base
// 1/fps, so it decodes back at exactly k/fps, the grid LeRobot's timestamps and from_timestamp use.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include <torch/torch.h>

namespace lrhost::io {

struct VideoWriterOptions {
  std::string codec = "libsvtav1";         // encoder name; "av1" means libsvtav1 as in LeRobot
  std::string fallback_codec = "libx264";  // used when `codec` is missing or refuses the settings
  int gop = 2;                             // keyframe interval (LeRobot's g)
  int crf = 30;
  int preset = 12;                       // libsvtav1 preset (0 slowest … 13 fastest)
  std::string x264_preset = "veryfast";  // preset of libx264/libx265
  std::string pix_fmt = "yuv420p";
  int threads = 0;  // encoder threads; 0 lets the encoder choose
};

class VideoWriter {
 public:
  VideoWriter(const std::filesystem::path& file, int width, int height, int fps, VideoWriterOptions options = {});
  ~VideoWriter();  // if finish() was not called: closes without throwing and removes the partial file
  VideoWriter(const VideoWriter&) = delete;
  VideoWriter& operator=(const VideoWriter&) = delete;

  // One frame, [H,W,3] uint8 RGB (any device; copied to the CPU). Throws util::DataError on a wrong
  // shape or dtype, util::IoError when encoding or writing fails.
  void write(const torch::Tensor& frame_hwc_uint8);
  // Flushes the encoder and writes the trailer (moov moved to the front). Throws util::IoError.
  void finish();

  const std::string& codec() const;  // the encoder actually used
  int64_t frames_written() const;
  const std::filesystem::path& path() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lrhost::io
