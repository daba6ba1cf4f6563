// Owning pointers, error text, log routing and exact pts→seconds for the FFmpeg-based video and PNG
// code (see av_util.hpp).
#include "host/io/av_util.hpp"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <mutex>
#include <new>

namespace lrhost::io::av {

FramePtr make_frame() {
  FramePtr frame(av_frame_alloc());
  if (!frame) throw std::bad_alloc();
  return frame;
}

PacketPtr make_packet() {
  PacketPtr packet(av_packet_alloc());
  if (!packet) throw std::bad_alloc();
  return packet;
}

CodecContextPtr make_codec_context(const AVCodec* codec) {
  CodecContextPtr context(avcodec_alloc_context3(codec));
  if (!context) throw std::bad_alloc();
  return context;
}

FramePtr ref_frame(const AVFrame* source) {
  FramePtr frame = make_frame();
  if (av_frame_ref(frame.get(), source) < 0) throw std::bad_alloc();
  return frame;
}

std::string quoted(const std::filesystem::path& file) {
  return "'" + file.string() + "'";
}

std::string error_text(int code) {
  char buffer[AV_ERROR_MAX_STRING_SIZE] = {};
  if (av_strerror(code, buffer, sizeof buffer) < 0) std::snprintf(buffer, sizeof buffer, "error %d", code);
  return buffer;
}

namespace {

void forward_log(void* avcl, int level, const char* format, va_list arguments) {
  if (level > av_log_get_level()) return;
  // FFmpeg may emit one line in several calls; the prefix state belongs to the calling thread.
  thread_local int print_prefix = 1;
  char line[1024];
  va_list copy;
  va_copy(copy, arguments);
  av_log_format_line2(avcl, level, format, copy, line, sizeof line, &print_prefix);
  va_end(copy);
  std::string text(line);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (!text.empty()) spdlog::debug("ffmpeg: {}", text);
}

}  // namespace

void install_log_forwarding() {
  static std::once_flag once;
  std::call_once(once, [] {
    av_log_set_level(AV_LOG_WARNING);
    av_log_set_callback(forward_log);
  });
}

double seconds(int64_t pts, AVRational time_base) {
  // pts * num is exact in a double up to 2^53; one division then rounds once, as Fraction → float.
  constexpr int64_t exact_limit = int64_t{1} << 53;
  int64_t numerator = 0;
  if (!__builtin_mul_overflow(pts, int64_t{time_base.num}, &numerator) && numerator > -exact_limit &&
      numerator < exact_limit && time_base.den != 0)
    return static_cast<double>(numerator) / static_cast<double>(time_base.den);
  return static_cast<double>(pts) * av_q2d(time_base);
}

}  // namespace lrhost::io::av
