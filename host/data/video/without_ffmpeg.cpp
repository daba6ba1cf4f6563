// The video-reading and PNG entry points of a build without FFmpeg (cmake -DLRHOST_WITH_FFMPEG=OFF, used on
// machines that lack libav*, such as the borrowed GPU machine of scripts/device-check). Every call
// raises NotImplemented naming what is missing, so a dataset with video or image columns fails with
// that message instead of a link error or a silent gap; everything else in lrhost works. The mp4
// writer's counterpart is host/io/video_writer_without_ffmpeg.cpp.
#include "host/data/video/png_codec.hpp"
#include "host/data/video/video_reader.hpp"
#include "host/util/error.hpp"

namespace lrhost::data {
namespace {

[[noreturn]] void unavailable(const std::string& what) {
  throw util::NotImplemented(
      "this lrhost was built without FFmpeg (LRHOST_WITH_FFMPEG=OFF): " + what + " is unavailable",
      "build with FFmpeg's libav* (scripts/setup installs them) to read video or image columns");
}

}  // namespace

torch::Tensor decode_png(std::string_view, const std::string& what) {
  unavailable("decoding PNG (" + what + ")");
}
std::string encode_png(const torch::Tensor&) {
  unavailable("encoding PNG");
}

VideoStreamInfo probe_video(const std::filesystem::path& file) {
  unavailable("reading video " + file.string());
}

struct VideoReader::Impl {};
VideoReader::VideoReader(const std::filesystem::path& file, VideoReaderOptions) {
  unavailable("reading video " + file.string());
}
VideoReader::~VideoReader() = default;
VideoReader::VideoReader(VideoReader&&) noexcept = default;
VideoReader& VideoReader::operator=(VideoReader&&) noexcept = default;
const VideoStreamInfo& VideoReader::info() const {
  unavailable("reading video");
}
const std::filesystem::path& VideoReader::path() const {
  unavailable("reading video");
}
torch::Tensor VideoReader::frames_at(std::span<const double>, double, std::vector<double>*) {
  unavailable("decoding video frames");
}
VideoReader::Scan VideoReader::scan_all_frames() {
  unavailable("decoding video frames");
}
int64_t VideoReader::seeks() const {
  return 0;
}
int64_t VideoReader::frames_decoded() const {
  return 0;
}

}  // namespace lrhost::data
