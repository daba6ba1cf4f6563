// Private helpers shared by the FFmpeg-based video and PNG code: owning smart pointers for the
// libav* objects (so every error path releases them), FFmpeg error codes as text, and the one-time
// routing of FFmpeg's own log output into spdlog. It sits in io/ with the mp4 writer, below data/, so that
// both the writer and the readers of host/data/video/ can share it. Only those FFmpeg-based .cpp files
// include this header; the public headers stay free of FFmpeg so that nothing else needs its include paths.
#pragma once

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

#include <filesystem>
#include <memory>
#include <string>

namespace lrhost::io::av {

struct InputFormatDeleter {
  void operator()(AVFormatContext* context) const { avformat_close_input(&context); }
};
struct CodecContextDeleter {
  void operator()(AVCodecContext* context) const { avcodec_free_context(&context); }
};
struct FrameDeleter {
  void operator()(AVFrame* frame) const { av_frame_free(&frame); }
};
struct PacketDeleter {
  void operator()(AVPacket* packet) const { av_packet_free(&packet); }
};
struct SwsDeleter {
  void operator()(SwsContext* context) const { sws_freeContext(context); }
};
struct DictionaryDeleter {
  void operator()(AVDictionary* dictionary) const { av_dict_free(&dictionary); }
};

using InputFormatPtr = std::unique_ptr<AVFormatContext, InputFormatDeleter>;
using CodecContextPtr = std::unique_ptr<AVCodecContext, CodecContextDeleter>;
using FramePtr = std::unique_ptr<AVFrame, FrameDeleter>;
using PacketPtr = std::unique_ptr<AVPacket, PacketDeleter>;
using SwsPtr = std::unique_ptr<SwsContext, SwsDeleter>;

// Allocations that throw std::bad_alloc instead of returning null.
FramePtr make_frame();
PacketPtr make_packet();
CodecContextPtr make_codec_context(const AVCodec* codec);

// A new reference to `source` (shares the buffers); throws on failure.
FramePtr ref_frame(const AVFrame* source);

// A file's path in single quotes, as our error messages name files.
std::string quoted(const std::filesystem::path& file);

// FFmpeg's description of an error code ("Invalid data found when processing input").
std::string error_text(int code);

// Sends FFmpeg's log lines to spdlog at debug level, once per process. Our exceptions already carry
// what went wrong; FFmpeg's chatter (e.g. from a corrupt file) is context for a --verbose run.
void install_log_forwarding();

// Time of `pts` (in units of `time_base`) in seconds, correctly rounded like Python's
// float(pts * Fraction(time_base)), which is what PyAV's frame.time gives LeRobot.
double seconds(int64_t pts, AVRational time_base);

}  // namespace lrhost::io::av
