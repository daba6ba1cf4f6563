// The mp4 writer of a build without FFmpeg (cmake -DLRHOST_WITH_FFMPEG=OFF; see
// host/data/video/without_ffmpeg.cpp for the readers): writing video raises NotImplemented naming what
// is missing, so writing a dataset with video or a rollout video fails with that message instead of a
// link error.
#include "host/io/video_writer.hpp"
#include "host/util/error.hpp"

namespace lrhost::io {
namespace {

[[noreturn]] void unavailable(const std::string& what) {
  throw util::NotImplemented(
      "this lrhost was built without FFmpeg (LRHOST_WITH_FFMPEG=OFF): " + what + " is unavailable",
      "build with FFmpeg's libav* (scripts/setup installs them) to read video or image columns");
}

}  // namespace

struct VideoWriter::Impl {};
VideoWriter::VideoWriter(const std::filesystem::path& file, int, int, int, VideoWriterOptions) {
  unavailable("writing video " + file.string());
}
VideoWriter::~VideoWriter() = default;
void VideoWriter::write(const torch::Tensor&) {
  unavailable("writing video");
}
void VideoWriter::finish() {
  unavailable("writing video");
}
const std::string& VideoWriter::codec() const {
  unavailable("writing video");
}
int64_t VideoWriter::frames_written() const {
  return 0;
}
const std::filesystem::path& VideoWriter::path() const {
  unavailable("writing video");
}

}  // namespace lrhost::io
