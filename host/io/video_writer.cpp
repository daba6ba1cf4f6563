// mp4 encoding of one camera's frames through libavcodec/libavformat (see video_writer.hpp). The
// encoder gets exact integer timestamps (frame k at pts k, time base 1/fps); the muxer rescales them
// to its own track timescale, which keeps k/fps exact on decode.
#include "host/io/video_writer.hpp"

#include "host/io/av_util.hpp"
#include "host/util/error.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <mutex>
#include <system_error>

namespace lrhost::io {

namespace fs = std::filesystem;

namespace {

const AVCodec* find_encoder(const std::string& name) {
  // LeRobot accepts "av1" as an alias of libsvtav1.
  const std::string resolved = name == "av1" ? "libsvtav1" : name;
  const AVCodec* codec = avcodec_find_encoder_by_name(resolved.c_str());
  if (!codec) {
    // A codec name ("h264", "hevc") selects FFmpeg's preferred encoder for it.
    if (const AVCodecDescriptor* descriptor = avcodec_descriptor_get_by_name(resolved.c_str()))
      codec = avcodec_find_encoder(descriptor->id);
  }
  return codec && codec->type == AVMEDIA_TYPE_VIDEO ? codec : nullptr;
}

bool supports_pix_fmt(const AVCodec* codec, AVPixelFormat pix_fmt) {
  if (!codec->pix_fmts) return true;
  for (const AVPixelFormat* format = codec->pix_fmts; *format != AV_PIX_FMT_NONE; ++format)
    if (*format == pix_fmt) return true;
  return false;
}

// SVT-AV1 prints a banner of info lines for every encoder it opens (one per episode and camera);
// errors only, unless the user set SVT_LOG. Done once, before the first encoder exists.
void quiet_svt_av1() {
  static std::once_flag once;
  std::call_once(once, [] { setenv("SVT_LOG", "1", /*overwrite=*/0); });
}

// The container, its file, and whether the file is to be kept; closes (and removes a partial file)
// on destruction, so every exit path — including a throwing constructor — cleans up.
struct Output {
  AVFormatContext* context = nullptr;
  fs::path file;
  bool opened = false;
  bool keep = false;

  ~Output() { close(); }

  void close() noexcept {
    if (!context) return;
    if (opened) avio_closep(&context->pb);
    avformat_free_context(context);
    context = nullptr;
    if (opened && !keep) {
      std::error_code ignored;
      fs::remove(file, ignored);
    }
  }
};

// An opened encoder and how many frames it was given. SVT-AV1 (1.4, through FFmpeg 5.1) hangs when
// its encoder is freed without having received end-of-stream, and also when end-of-stream follows
// zero frames. So an encoder is always drained before being freed — also on error paths and when
// finish() was never called — after one black frame if it never got any; the packets are discarded.
struct Encoder {
  AVCodecContext* context = nullptr;
  int64_t frames_sent = 0;
  bool flushed = false;

  Encoder() = default;
  Encoder(const Encoder&) = delete;
  Encoder& operator=(const Encoder&) = delete;
  ~Encoder() { close(); }

  AVCodecContext* operator->() const { return context; }
  explicit operator bool() const { return context != nullptr; }

  void close() noexcept {
    if (!context) return;
    if (avcodec_is_open(context) && !flushed) {
      if (frames_sent == 0) send_black_frame();
      if (avcodec_send_frame(context, nullptr) >= 0) {
        AVPacket* packet = av_packet_alloc();
        while (packet && avcodec_receive_packet(context, packet) >= 0) av_packet_unref(packet);
        av_packet_free(&packet);
      }
    }
    avcodec_free_context(&context);
    frames_sent = 0;
    flushed = false;
  }

  void send_black_frame() noexcept {
    AVFrame* frame = av_frame_alloc();
    if (!frame) return;
    frame->format = context->pix_fmt;
    frame->width = context->width;
    frame->height = context->height;
    frame->pts = 0;
    if (av_frame_get_buffer(frame, 0) >= 0) {
      ptrdiff_t strides[4] = {frame->linesize[0], frame->linesize[1], frame->linesize[2], frame->linesize[3]};
      av_image_fill_black(frame->data, strides, context->pix_fmt, AVCOL_RANGE_MPEG, frame->width, frame->height);
      avcodec_send_frame(context, frame);
    }
    av_frame_free(&frame);
  }
};

}  // namespace

struct VideoWriter::Impl {
  fs::path file;
  int width, height, fps;
  VideoWriterOptions options;
  AVPixelFormat pix_fmt = AV_PIX_FMT_NONE;
  std::string codec_name;
  Output output;
  Encoder encoder;
  AVStream* stream = nullptr;
  av::FramePtr frame = av::make_frame();
  av::PacketPtr packet = av::make_packet();
  av::SwsPtr sws;
  int64_t written = 0;
  bool finished = false;

  Impl(const fs::path& path, int frame_width, int frame_height, int frame_rate, VideoWriterOptions writer_options)
      : file(path), width(frame_width), height(frame_height), fps(frame_rate), options(std::move(writer_options)) {
    av::install_log_forwarding();
    if (fps <= 0) throw util::ConfigError(fmt::format("video {}: fps must be positive, got {}", av::quoted(file), fps));
    pix_fmt = av_get_pix_fmt(options.pix_fmt.c_str());
    if (pix_fmt == AV_PIX_FMT_NONE)
      throw util::ConfigError("video " + av::quoted(file) + ": unknown pixel format '" + options.pix_fmt + "'");
    const AVPixFmtDescriptor* descriptor = av_pix_fmt_desc_get(pix_fmt);
    int align_w = 1 << descriptor->log2_chroma_w, align_h = 1 << descriptor->log2_chroma_h;
    if (width <= 0 || height <= 0 || width % align_w != 0 || height % align_h != 0)
      throw util::DataError(
          fmt::format("video {}: cannot encode {}x{} frames in {}", av::quoted(file), width, height, options.pix_fmt),
          "width and height must be positive, and even for 4:2:0 pixel formats");

    output.file = file;
    int result = avformat_alloc_output_context2(&output.context, nullptr, nullptr, file.c_str());
    if (result < 0 || !output.context)
      result = avformat_alloc_output_context2(&output.context, nullptr, "mp4", file.c_str());
    if (result < 0 || !output.context)
      throw util::IoError("cannot create a muxer for video " + av::quoted(file) + ": " + av::error_text(result));

    // The file first: a path that cannot be written fails before any encoder exists.
    if (!(output.context->oformat->flags & AVFMT_NOFILE)) {
      result = avio_open(&output.context->pb, file.c_str(), AVIO_FLAG_WRITE);
      if (result < 0)
        throw util::IoError("cannot create video file " + av::quoted(file) + ": " + av::error_text(result));
      output.opened = true;
    }

    std::string first_failure;
    bool opened = open_encoder(options.codec, first_failure);
    if (!opened && !options.fallback_codec.empty() && options.fallback_codec != options.codec) {
      std::string second_failure;
      opened = open_encoder(options.fallback_codec, second_failure);
      if (!opened)
        throw util::IoError("cannot encode video " + av::quoted(file) + ": " + first_failure +
                            "; fallback: " + second_failure);
      spdlog::warn("video {}: {}; encoding with {} instead", av::quoted(file), first_failure, codec_name);
    }
    if (!opened) throw util::IoError("cannot encode video " + av::quoted(file) + ": " + first_failure);

    stream = avformat_new_stream(output.context, nullptr);
    if (!stream) throw std::bad_alloc();
    stream->time_base = encoder->time_base;
    stream->avg_frame_rate = encoder->framerate;
    result = avcodec_parameters_from_context(stream->codecpar, encoder.context);
    if (result < 0)
      throw util::IoError("cannot set up the stream of video " + av::quoted(file) + ": " + av::error_text(result));

    AVDictionary* muxer_options = nullptr;
    av_dict_set(&muxer_options, "movflags", "faststart", 0);
    result = avformat_write_header(output.context, &muxer_options);
    av_dict_free(&muxer_options);
    if (result < 0)
      throw util::IoError("cannot write the header of video " + av::quoted(file) + ": " + av::error_text(result));

    frame->format = pix_fmt;
    frame->width = width;
    frame->height = height;
    result = av_frame_get_buffer(frame.get(), 0);
    if (result < 0) throw std::bad_alloc();
    sws.reset(sws_getContext(width, height, AV_PIX_FMT_RGB24, width, height, pix_fmt, SWS_BILINEAR, nullptr, nullptr,
                             nullptr));
    if (!sws) throw util::IoError("video " + av::quoted(file) + ": cannot convert RGB frames to " + options.pix_fmt);
  }

  // Opens encoder `name` into `encoder`; false with the reason in `why` (missing, refused settings).
  bool open_encoder(const std::string& name, std::string& why) {
    const AVCodec* codec = find_encoder(name);
    if (!codec) {
      why = "encoder '" + name + "' is not available in this FFmpeg build";
      return false;
    }
    if (!supports_pix_fmt(codec, pix_fmt)) {
      why = "encoder '" + std::string(codec->name) + "' does not support pixel format " + options.pix_fmt;
      return false;
    }
    const std::string codec_id = codec->name;
    if (codec_id == "libsvtav1") quiet_svt_av1();
    AVCodecContext* context = avcodec_alloc_context3(codec);
    if (!context) throw std::bad_alloc();
    encoder.close();
    encoder.context = context;  // owned (and freed) by `encoder` from here on
    context->width = width;
    context->height = height;
    context->pix_fmt = pix_fmt;
    context->time_base = AVRational{1, fps};
    context->framerate = AVRational{fps, 1};
    context->gop_size = options.gop;
    context->color_range = AVCOL_RANGE_MPEG;  // what swscale's RGB → YUV conversion produces
    if (options.threads > 0) context->thread_count = options.threads;
    if (output.context->oformat->flags & AVFMT_GLOBALHEADER) context->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;

    AVDictionary* settings = nullptr;
    av_dict_set_int(&settings, "g", options.gop, 0);
    if (av_opt_find(context->priv_data, "crf", nullptr, 0, 0)) av_dict_set_int(&settings, "crf", options.crf, 0);
    if (codec_id == "libsvtav1") {
      av_dict_set_int(&settings, "preset", options.preset, 0);
      std::string params = "fast-decode=0";
      if (options.threads > 0) params += ":lp=" + std::to_string(options.threads);
      av_dict_set(&settings, "svtav1-params", params.c_str(), 0);
    } else if (codec_id == "libx264" || codec_id == "libx265") {
      av_dict_set(&settings, "preset", options.x264_preset.c_str(), 0);
    }
    int result = avcodec_open2(context, codec, &settings);
    std::string ignored;
    for (const AVDictionaryEntry* entry = nullptr; (entry = av_dict_get(settings, "", entry, AV_DICT_IGNORE_SUFFIX));)
      ignored += std::string(ignored.empty() ? "" : ", ") + entry->key;
    av_dict_free(&settings);
    if (result < 0) {
      why = fmt::format("encoder '{}' refused {}x{} {} at {} fps: {}", codec_id, width, height, options.pix_fmt, fps,
                        av::error_text(result));
      encoder.close();
      return false;
    }
    if (!ignored.empty()) spdlog::warn("video {}: encoder {} ignored options {}", av::quoted(file), codec_id, ignored);
    codec_name = codec_id;
    return true;
  }

  // Moves every packet the encoder has ready into the file.
  void drain() {
    while (true) {
      int result = avcodec_receive_packet(encoder.context, packet.get());
      if (result == AVERROR(EAGAIN) || result == AVERROR_EOF) return;
      if (result < 0) throw util::IoError("cannot encode video " + av::quoted(file) + ": " + av::error_text(result));
      if (packet->duration == 0) packet->duration = 1;  // the last frame's duration sets the track's
      av_packet_rescale_ts(packet.get(), encoder->time_base, stream->time_base);
      packet->stream_index = stream->index;
      result = av_interleaved_write_frame(output.context, packet.get());
      if (result < 0)
        throw util::IoError("cannot write video file " + av::quoted(file) + ": " + av::error_text(result));
    }
  }

  void write(const torch::Tensor& image) {
    if (finished) throw util::IoError("video " + av::quoted(file) + ": write() after finish()");
    if (image.dim() != 3 || image.size(0) != height || image.size(1) != width || image.size(2) != 3 ||
        image.scalar_type() != torch::kUInt8)
      throw util::DataError(
          fmt::format("video {}: a frame must be uint8 [{},{},3] (H,W,RGB), got {} {}", av::quoted(file), height, width,
                      std::string(c10::toString(image.scalar_type())), fmt::join(image.sizes(), "x")));
    torch::Tensor rgb = image.to(torch::kCPU).contiguous();
    // The encoder may still hold the previous frame's buffers.
    int result = av_frame_make_writable(frame.get());
    if (result < 0) throw std::bad_alloc();
    const uint8_t* source[4] = {rgb.data_ptr<uint8_t>(), nullptr, nullptr, nullptr};
    int source_stride[4] = {width * 3, 0, 0, 0};
    sws_scale(sws.get(), source, source_stride, 0, height, frame->data, frame->linesize);
    frame->pts = written;
#if LIBAVUTIL_VERSION_INT >= AV_VERSION_INT(57, 30, 100)
    frame->duration = 1;
#else
    frame->pkt_duration = 1;
#endif
    result = avcodec_send_frame(encoder.context, frame.get());
    if (result < 0) throw util::IoError("cannot encode video " + av::quoted(file) + ": " + av::error_text(result));
    ++encoder.frames_sent;
    ++written;
    drain();
  }

  void finish() {
    if (finished) return;
    if (written == 0) throw util::DataError("video " + av::quoted(file) + ": no frames were written");
    encoder.flushed = true;
    int result = avcodec_send_frame(encoder.context, nullptr);
    if (result < 0 && result != AVERROR_EOF)
      throw util::IoError("cannot flush the encoder of video " + av::quoted(file) + ": " + av::error_text(result));
    drain();
    result = av_write_trailer(output.context);
    if (result < 0) throw util::IoError("cannot finish video file " + av::quoted(file) + ": " + av::error_text(result));
    output.keep = true;
    output.close();
    finished = true;
  }
};

VideoWriter::VideoWriter(const fs::path& file, int width, int height, int fps, VideoWriterOptions options)
    : impl_(std::make_unique<Impl>(file, width, height, fps, std::move(options))) {}

VideoWriter::~VideoWriter() = default;  // Output removes the partial file unless finish() succeeded

void VideoWriter::write(const torch::Tensor& frame_hwc_uint8) {
  impl_->write(frame_hwc_uint8);
}
void VideoWriter::finish() {
  impl_->finish();
}
const std::string& VideoWriter::codec() const {
  return impl_->codec_name;
}
int64_t VideoWriter::frames_written() const {
  return impl_->written;
}
const fs::path& VideoWriter::path() const {
  return impl_->file;
}

}  // namespace lrhost::io
