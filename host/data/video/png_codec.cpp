// PNG decode/encode through libavcodec (see png_codec.hpp). One short-lived codec context per image:
// opening the PNG codec is cheap next to inflating the image, and it keeps the functions free of
// shared state, so loader threads can call them concurrently.
#include "host/data/video/png_codec.hpp"

#include "host/io/av_util.hpp"
#include "host/util/error.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>

namespace lrhost::data {

namespace {

constexpr std::string_view kPngSignature{"\x89PNG\r\n\x1a\n", 8};

struct Layout {
  AVPixelFormat format;  // 8-bit format the image is delivered in
  int channels;
};

// The 8-bit layout a decoded PNG pixel format is delivered in.
Layout layout_of(const AVFrame* frame) {
  switch (static_cast<AVPixelFormat>(frame->format)) {
    case AV_PIX_FMT_GRAY8:
    case AV_PIX_FMT_GRAY16BE:
    case AV_PIX_FMT_MONOBLACK:
    case AV_PIX_FMT_MONOWHITE:
      return {AV_PIX_FMT_GRAY8, 1};
    case AV_PIX_FMT_YA8:
    case AV_PIX_FMT_YA16BE:
      return {AV_PIX_FMT_YA8, 2};
    case AV_PIX_FMT_RGB24:
    case AV_PIX_FMT_RGB48BE:
      return {AV_PIX_FMT_RGB24, 3};
    case AV_PIX_FMT_RGBA:
    case AV_PIX_FMT_RGBA64BE:
      return {AV_PIX_FMT_RGBA, 4};
    case AV_PIX_FMT_PAL8: {
      // The palette is 256 native-endian 0xAARRGGBB words in data[1].
      const auto* palette = reinterpret_cast<const uint32_t*>(frame->data[1]);
      for (int i = 0; palette && i < 256; ++i)
        if ((palette[i] >> 24) != 0xFF) return {AV_PIX_FMT_RGBA, 4};
      return {AV_PIX_FMT_RGB24, 3};
    }
    default:
      return {AV_PIX_FMT_NONE, 0};
  }
}

}  // namespace

torch::Tensor decode_png(std::string_view bytes, const std::string& what) {
  io::av::install_log_forwarding();
  if (bytes.size() < kPngSignature.size() || bytes.substr(0, kPngSignature.size()) != kPngSignature)
    throw util::IoError(what + ": not a PNG image (" + std::to_string(bytes.size()) +
                        " bytes without the PNG signature)");
  const AVCodec* codec = avcodec_find_decoder(AV_CODEC_ID_PNG);
  if (!codec) throw util::IoError(what + ": this FFmpeg build has no PNG decoder");
  io::av::CodecContextPtr decoder = io::av::make_codec_context(codec);
  decoder->thread_count = 1;
  int result = avcodec_open2(decoder.get(), codec, nullptr);
  if (result < 0) throw util::IoError(what + ": cannot open the PNG decoder: " + io::av::error_text(result));

  io::av::PacketPtr packet = io::av::make_packet();
  // av_new_packet adds the zeroed padding that decoders may read past the end.
  if (av_new_packet(packet.get(), static_cast<int>(bytes.size())) < 0) throw std::bad_alloc();
  std::memcpy(packet->data, bytes.data(), bytes.size());
  io::av::FramePtr frame = io::av::make_frame();
  result = avcodec_send_packet(decoder.get(), packet.get());
  if (result >= 0) {
    result = avcodec_receive_frame(decoder.get(), frame.get());
    if (result == AVERROR(EAGAIN)) {
      avcodec_send_packet(decoder.get(), nullptr);
      result = avcodec_receive_frame(decoder.get(), frame.get());
    }
  }
  if (result < 0) throw util::IoError(what + ": corrupt PNG image: " + io::av::error_text(result));
  if (frame->width <= 0 || frame->height <= 0) throw util::IoError(what + ": corrupt PNG image (no size)");

  Layout layout = layout_of(frame.get());
  if (layout.format == AV_PIX_FMT_NONE) {
    const char* name = av_get_pix_fmt_name(static_cast<AVPixelFormat>(frame->format));
    throw util::IoError(what + ": unsupported PNG pixel format '" + (name ? name : "unknown") + "'");
  }
  const int width = frame->width, height = frame->height;
  torch::Tensor hwc = torch::empty({height, width, layout.channels}, torch::kUInt8);
  uint8_t* target = hwc.data_ptr<uint8_t>();
  const int row_bytes = width * layout.channels;
  if (frame->format == layout.format) {
    for (int y = 0; y < height; ++y)
      std::memcpy(target + static_cast<std::ptrdiff_t>(y) * row_bytes,
                  frame->data[0] + static_cast<std::ptrdiff_t>(y) * frame->linesize[0],
                  static_cast<std::size_t>(row_bytes));
  } else {
    io::av::SwsPtr sws(sws_getContext(width, height, static_cast<AVPixelFormat>(frame->format), width, height,
                                      layout.format, SWS_POINT, nullptr, nullptr, nullptr));
    if (!sws) throw util::IoError(what + ": cannot convert the PNG's pixel format to 8 bits");
    uint8_t* planes[4] = {target, nullptr, nullptr, nullptr};
    int strides[4] = {row_bytes, 0, 0, 0};
    sws_scale(sws.get(), frame->data, frame->linesize, 0, height, planes, strides);
  }
  return hwc.permute({2, 0, 1}).contiguous();
}

std::string encode_png(const torch::Tensor& hwc_uint8) {
  io::av::install_log_forwarding();
  torch::Tensor image = hwc_uint8.dim() == 2 ? hwc_uint8.unsqueeze(2) : hwc_uint8;
  if (image.dim() != 3 || image.size(2) < 1 || image.size(2) > 4 || image.scalar_type() != torch::kUInt8 ||
      image.size(0) <= 0 || image.size(1) <= 0)
    throw util::DataError(fmt::format("encode_png: expected a uint8 [H,W,C] image with C in 1..4, got {} [{}]",
                                      std::string(c10::toString(hwc_uint8.scalar_type())),
                                      fmt::join(hwc_uint8.sizes(), ",")));
  image = image.to(torch::kCPU).contiguous();
  const int height = static_cast<int>(image.size(0)), width = static_cast<int>(image.size(1));
  const int channels = static_cast<int>(image.size(2));
  static constexpr AVPixelFormat formats[] = {AV_PIX_FMT_GRAY8, AV_PIX_FMT_YA8, AV_PIX_FMT_RGB24, AV_PIX_FMT_RGBA};

  const AVCodec* codec = avcodec_find_encoder(AV_CODEC_ID_PNG);
  if (!codec) throw util::IoError("this FFmpeg build has no PNG encoder");
  io::av::CodecContextPtr encoder = io::av::make_codec_context(codec);
  encoder->width = width;
  encoder->height = height;
  encoder->pix_fmt = formats[channels - 1];
  encoder->time_base = AVRational{1, 1};
  encoder->thread_count = 1;
  int result = avcodec_open2(encoder.get(), codec, nullptr);
  if (result < 0) throw util::IoError("cannot open the PNG encoder: " + io::av::error_text(result));

  io::av::FramePtr frame = io::av::make_frame();
  frame->format = encoder->pix_fmt;
  frame->width = width;
  frame->height = height;
  if (av_frame_get_buffer(frame.get(), 0) < 0) throw std::bad_alloc();
  const uint8_t* source = image.data_ptr<uint8_t>();
  const int row_bytes = width * channels;
  for (int y = 0; y < height; ++y)
    std::memcpy(frame->data[0] + static_cast<std::ptrdiff_t>(y) * frame->linesize[0],
                source + static_cast<std::ptrdiff_t>(y) * row_bytes, static_cast<std::size_t>(row_bytes));
  frame->pts = 0;

  io::av::PacketPtr packet = io::av::make_packet();
  result = avcodec_send_frame(encoder.get(), frame.get());
  if (result >= 0) result = avcodec_send_frame(encoder.get(), nullptr);
  std::string bytes;
  while (result >= 0) {
    result = avcodec_receive_packet(encoder.get(), packet.get());
    if (result < 0) break;
    bytes.append(reinterpret_cast<const char*>(packet->data), static_cast<std::size_t>(packet->size));
    av_packet_unref(packet.get());
  }
  if (result != AVERROR_EOF || bytes.empty()) throw util::IoError("PNG encoding failed: " + io::av::error_text(result));
  return bytes;
}

}  // namespace lrhost::data
