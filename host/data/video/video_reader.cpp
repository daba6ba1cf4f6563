// Nearest-frame lookup in a video file through libavformat/libavcodec/libswscale (see
// video_reader.hpp). Frames are matched the way LeRobot's pyav backend matches them: the time of a
// frame is pts × time_base of the stream, and each query takes the frame at minimal |time − query|.
// Decoded frames stay in the stream's own pixel format until a query chooses them, so only chosen
// frames pay for the RGB conversion.
#include "host/data/video/video_reader.hpp"

#include "host/io/av_util.hpp"
#include "host/util/error.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <system_error>

namespace lrhost::data {

namespace fs = std::filesystem;

namespace {

io::av::InputFormatPtr open_input(const fs::path& file) {
  io::av::install_log_forwarding();
  std::error_code ec;
  if (!fs::exists(file, ec)) throw util::IoError("video file not found: " + io::av::quoted(file));
  if (fs::is_directory(file, ec)) throw util::IoError("video path is a directory, not a file: " + io::av::quoted(file));
  AVFormatContext* raw = nullptr;
  int result = avformat_open_input(&raw, file.c_str(), nullptr, nullptr);
  if (result < 0) throw util::IoError("cannot open video " + io::av::quoted(file) + ": " + io::av::error_text(result));
  io::av::InputFormatPtr format(raw);
  result = avformat_find_stream_info(format.get(), nullptr);
  if (result < 0)
    throw util::IoError("cannot read the streams of video " + io::av::quoted(file) + ": " + io::av::error_text(result));
  return format;
}

// The first real video stream (cover-art pictures are video streams too, but not a video).
int first_video_stream(const AVFormatContext* format, const fs::path& file) {
  for (unsigned i = 0; i < format->nb_streams; ++i) {
    const AVStream* stream = format->streams[i];
    if (stream->codecpar->codec_type == AVMEDIA_TYPE_VIDEO && !(stream->disposition & AV_DISPOSITION_ATTACHED_PIC))
      return static_cast<int>(i);
  }
  throw util::IoError("no video stream in " + io::av::quoted(file));
}

bool valid(AVRational rate) {
  return rate.num > 0 && rate.den > 0;
}

VideoStreamInfo make_info(const AVFormatContext* format, int index) {
  const AVStream* stream = format->streams[index];
  const AVCodecParameters* parameters = stream->codecpar;
  VideoStreamInfo info;
  info.codec = avcodec_get_name(parameters->codec_id);
  const char* pix_fmt = av_get_pix_fmt_name(static_cast<AVPixelFormat>(parameters->format));
  info.pix_fmt = pix_fmt ? pix_fmt : "";
  info.width = parameters->width;
  info.height = parameters->height;
  // PyAV's stream.base_rate (what LeRobot records as video.fps) is r_frame_rate.
  AVRational rate = valid(stream->r_frame_rate) ? stream->r_frame_rate : stream->avg_frame_rate;
  info.fps = valid(rate) ? av_q2d(rate) : 0.0;
  if (stream->duration != AV_NOPTS_VALUE && stream->duration > 0)
    info.duration_s = io::av::seconds(stream->duration, stream->time_base);
  else if (format->duration != AV_NOPTS_VALUE && format->duration > 0)
    info.duration_s = static_cast<double>(format->duration) / AV_TIME_BASE;
  info.frame_count = stream->nb_frames > 0 ? stream->nb_frames : std::llround(info.duration_s * info.fps);
  for (unsigned i = 0; i < format->nb_streams; ++i)
    if (format->streams[i]->codecpar->codec_type == AVMEDIA_TYPE_AUDIO) info.has_audio = true;
  return info;
}

}  // namespace

VideoStreamInfo probe_video(const fs::path& file) {
  io::av::InputFormatPtr format = open_input(file);
  return make_info(format.get(), first_video_stream(format.get(), file));
}

struct VideoReader::Impl {
  struct Decoded {
    io::av::FramePtr frame;
    double time = 0;
  };

  fs::path file;
  VideoReaderOptions options;
  VideoStreamInfo info;
  io::av::InputFormatPtr format;
  AVStream* stream = nullptr;
  int stream_index = -1;
  io::av::CodecContextPtr decoder;
  io::av::PacketPtr packet = io::av::make_packet();
  io::av::FramePtr frame = io::av::make_frame();

  // The most recent decoded frames, contiguous in output order, ending at the decode position.
  std::deque<Decoded> retained;
  bool at_start = false;  // retained.front() is the first frame of the stream
  bool flushing = false;  // the demuxer hit the end; the decoder is being drained
  bool drained = false;   // the decoder gave its last frame
  int64_t last_read_dts = std::numeric_limits<int64_t>::min();
  int64_t frame_ticks = 1;  // one frame period in stream time_base units
  int64_t seek_count = 0, decoded_count = 0;

  io::av::SwsPtr sws;
  struct SwsKey {
    int format = -1, width = 0, height = 0, colorspace = -1, range = -1;
    bool operator==(const SwsKey&) const = default;
  } sws_key;

  Impl(const fs::path& path, VideoReaderOptions reader_options) : file(path), options(reader_options) {
    format = open_input(file);
    stream_index = first_video_stream(format.get(), file);
    stream = format->streams[stream_index];
    info = make_info(format.get(), stream_index);
    if (info.width <= 0 || info.height <= 0)
      throw util::IoError("video " + io::av::quoted(file) + " has no valid frame size");
    // Other streams (audio, data) are never read into packets we keep.
    for (unsigned i = 0; i < format->nb_streams; ++i)
      if (static_cast<int>(i) != stream_index) format->streams[i]->discard = AVDISCARD_ALL;
    if (info.fps > 0) {
      double ticks = 1.0 / (info.fps * av_q2d(stream->time_base));
      frame_ticks = std::max<int64_t>(1, std::llround(ticks));
    }
    open_decoder();
  }

  void open_decoder() {
    const AVCodecParameters* parameters = stream->codecpar;
    const AVCodec* codec = nullptr;
    // dav1d is the fast AV1 decoder; FFmpeg may otherwise pick libaom or its own hwaccel-only one.
    if (parameters->codec_id == AV_CODEC_ID_AV1) codec = avcodec_find_decoder_by_name("libdav1d");
    if (!codec) codec = avcodec_find_decoder(parameters->codec_id);
    if (!codec)
      throw util::IoError("no decoder for codec '" + info.codec + "' of video " + io::av::quoted(file),
                          "this FFmpeg build lacks a decoder for it; re-encode the video (e.g. to AV1 or H.264)");
    decoder = io::av::make_codec_context(codec);
    int result = avcodec_parameters_to_context(decoder.get(), parameters);
    if (result < 0)
      throw util::IoError("cannot set up the decoder of video " + io::av::quoted(file) + ": " +
                          io::av::error_text(result));
    decoder->pkt_timebase = stream->time_base;
    decoder->thread_count = std::max(1, options.decoder_threads);
    result = avcodec_open2(decoder.get(), codec, nullptr);
    if (result < 0)
      throw util::IoError("cannot open the " + std::string(codec->name) + " decoder for video " + io::av::quoted(file) +
                          ": " + io::av::error_text(result));
  }

  // Query time → stream ticks, rounding a value that is an integer up to float noise to it.
  int64_t to_ticks(double t) const {
    double ticks = t / av_q2d(stream->time_base);
    return static_cast<int64_t>(std::floor(ticks + 1e-6));
  }

  // The timestamp of the stream's first keyframe (where a seek "to the start" goes).
  int64_t first_ticks() const {
    if (avformat_index_get_entries_count(stream) > 0) return avformat_index_get_entry(stream, 0)->timestamp;
    return stream->start_time != AV_NOPTS_VALUE ? stream->start_time : 0;
  }

  void position_at(int64_t ticks) {
    int result = av_seek_frame(format.get(), stream_index, ticks, AVSEEK_FLAG_BACKWARD);
    if (result < 0) result = av_seek_frame(format.get(), stream_index, first_ticks(), AVSEEK_FLAG_BACKWARD);
    if (result < 0)
      throw util::IoError(fmt::format("cannot seek in video {} to t={:.6f}s: {}", io::av::quoted(file),
                                      io::av::seconds(ticks, stream->time_base), io::av::error_text(result)));
    avcodec_flush_buffers(decoder.get());
    retained.clear();
    at_start = flushing = drained = false;
    last_read_dts = std::numeric_limits<int64_t>::min();
    ++seek_count;
  }

  // Decodes the next frame in presentation order into retained.back(); null at the end of the stream.
  const Decoded* decode_next() {
    while (!drained) {
      int result = avcodec_receive_frame(decoder.get(), frame.get());
      if (result == 0) {
        int64_t pts = frame->pts != AV_NOPTS_VALUE ? frame->pts : frame->best_effort_timestamp;
        if (pts == AV_NOPTS_VALUE) {  // a frame without a time cannot be matched to a query
          av_frame_unref(frame.get());
          continue;
        }
        ++decoded_count;
        Decoded decoded{io::av::make_frame(), io::av::seconds(pts, stream->time_base)};
        av_frame_move_ref(decoded.frame.get(), frame.get());
        retained.push_back(std::move(decoded));
        while (retained.size() > static_cast<std::size_t>(std::max(1, options.retained_frames))) {
          retained.pop_front();
          at_start = false;
        }
        return &retained.back();
      }
      if (result == AVERROR_EOF) {
        drained = true;
        break;
      }
      if (result != AVERROR(EAGAIN))
        throw util::IoError("cannot decode video " + io::av::quoted(file) + ": " + io::av::error_text(result),
                            "the file may be corrupt or truncated");
      if (flushing) {  // a drained decoder should report EOF, never ask for input
        drained = true;
        break;
      }
      result = av_read_frame(format.get(), packet.get());
      if (result == AVERROR_EOF) {
        flushing = true;
        avcodec_send_packet(decoder.get(), nullptr);
        continue;
      }
      if (result < 0)
        throw util::IoError("cannot read video " + io::av::quoted(file) + ": " + io::av::error_text(result),
                            "the file may be corrupt or truncated");
      if (packet->stream_index != stream_index) {
        av_packet_unref(packet.get());
        continue;
      }
      if (packet->dts != AV_NOPTS_VALUE)
        last_read_dts = packet->dts;
      else if (packet->pts != AV_NOPTS_VALUE)
        last_read_dts = packet->pts;
      result = avcodec_send_packet(decoder.get(), packet.get());
      av_packet_unref(packet.get());
      if (result < 0 && result != AVERROR(EAGAIN))
        throw util::IoError("cannot decode video " + io::av::quoted(file) + ": " + io::av::error_text(result),
                            "the file may be corrupt or truncated");
    }
    return nullptr;
  }

  // Whether the frames for a call starting at `first_query` can come from the current decode
  // position (retained frames plus decoding forward) instead of a seek.
  bool can_continue(double first_query) const {
    if (retained.empty()) return false;
    if (first_query < retained.front().time && !at_start) return false;
    if (drained || first_query <= retained.back().time) return true;
    // Ahead of the decode position: a seek would land on the keyframe at/before the query. When we
    // have already read up to that keyframe, decoding on is never slower than seeking back to it.
    const AVIndexEntry* keyframe =
        avformat_index_get_entry_from_timestamp(stream, to_ticks(first_query), AVSEEK_FLAG_BACKWARD);
    if (keyframe) return keyframe->timestamp <= last_read_dts + frame_ticks;
    return first_query - retained.back().time <= options.continue_within_s;
  }

  // Seeks so that the first decoded frame is at/before `first_query` (or is the stream's first).
  void seek_for(double first_query) {
    int64_t target = to_ticks(first_query);
    int64_t step = frame_ticks;
    const int64_t start = first_ticks();
    for (int attempt = 0;; ++attempt) {
      bool from_start = attempt >= 8 || target <= start;
      position_at(from_start ? start : target);
      const Decoded* first = decode_next();
      if (!first || from_start || first->time <= first_query) {
        at_start = from_start && first;
        return;
      }
      // The keyframe found by decode timestamp shows later than the query (B-frame reorder delay,
      // edit lists): go back further so that the frame before the query is decoded too.
      target = std::min(target, to_ticks(first->time)) - step;
      step *= 2;
    }
  }

  // Converts one decoded frame to RGB into `chw` ([3,H,W] uint8, contiguous).
  void to_rgb(const AVFrame* source, torch::Tensor& chw) {
    const int width = info.width, height = info.height;
    SwsKey key{source->format, source->width, source->height, source->colorspace, source->color_range};
    SwsContext* context =
        sws_getCachedContext(sws.release(), source->width, source->height, static_cast<AVPixelFormat>(source->format),
                             width, height, AV_PIX_FMT_RGB24, SWS_BILINEAR, nullptr, nullptr, nullptr);
    sws.reset(context);
    if (!context) {
      const char* name = av_get_pix_fmt_name(static_cast<AVPixelFormat>(source->format));
      throw util::IoError("cannot convert frames of video " + io::av::quoted(file) + " from pixel format '" +
                          (name ? name : "unknown") + "' to RGB");
    }
    if (!(key == sws_key)) {
      // Use the matrix and range the stream declares (BT.601 limited range when it declares none),
      // as PyAV and torchcodec do.
      const AVPixFmtDescriptor* descriptor = av_pix_fmt_desc_get(static_cast<AVPixelFormat>(source->format));
      bool yuv = descriptor && !(descriptor->flags & AV_PIX_FMT_FLAG_RGB) && descriptor->nb_components >= 3;
      if (yuv) {
        int *inverse_table = nullptr, *table = nullptr;
        int source_range = 0, target_range = 0, brightness = 0, contrast = 0, saturation = 0;
        if (sws_getColorspaceDetails(context, &inverse_table, &source_range, &table, &target_range, &brightness,
                                     &contrast, &saturation) >= 0) {
          int colorspace = source->colorspace == AVCOL_SPC_UNSPECIFIED ? SWS_CS_DEFAULT : source->colorspace;
          if (source->color_range == AVCOL_RANGE_JPEG) source_range = 1;
          sws_setColorspaceDetails(context, sws_getCoefficients(colorspace), source_range, table, target_range,
                                   brightness, contrast, saturation);
        }
      }
      sws_key = key;
    }
    torch::Tensor hwc = torch::empty({height, width, 3}, torch::kUInt8);
    uint8_t* target[4] = {hwc.data_ptr<uint8_t>(), nullptr, nullptr, nullptr};
    int target_stride[4] = {width * 3, 0, 0, 0};
    int rows = sws_scale(context, source->data, source->linesize, 0, source->height, target, target_stride);
    if (rows != height) throw util::IoError("cannot convert a frame of video " + io::av::quoted(file) + " to RGB");
    chw.copy_(hwc.permute({2, 0, 1}));
  }

  torch::Tensor frames_at(std::span<const double> times, double tolerance_s, std::vector<double>* found_times) {
    if (!(tolerance_s >= 0))
      throw util::DataError(
          fmt::format("video {}: tolerance_s must be >= 0, got {}", io::av::quoted(file), tolerance_s));
    for (double t : times)
      if (!std::isfinite(t) || std::abs(t) > 1e9)
        throw util::DataError(
            fmt::format("video {}: query time {} is not a valid time in seconds", io::av::quoted(file), t));
    std::vector<double> queries(times.begin(), times.end());
    std::sort(queries.begin(), queries.end());
    queries.erase(std::unique(queries.begin(), queries.end()), queries.end());

    std::vector<Decoded> chosen(queries.size());
    if (!queries.empty()) {
      std::size_t next = 0;  // first query without a frame yet
      io::av::FramePtr previous;
      double previous_time = 0;
      // Frames arrive in presentation order; a query is settled by the first frame at/after it,
      // choosing between that frame and the one before (ties to the earlier, like argmin).
      auto consider = [&](const AVFrame* candidate, double time) {
        while (next < queries.size() && time >= queries[next]) {
          bool take_previous = previous && queries[next] - previous_time <= time - queries[next];
          chosen[next] = take_previous ? Decoded{io::av::ref_frame(previous.get()), previous_time}
                                       : Decoded{io::av::ref_frame(candidate), time};
          ++next;
        }
        previous = io::av::ref_frame(candidate);
        previous_time = time;
      };
      if (!can_continue(queries.front())) seek_for(queries.front());
      for (const Decoded& decoded : retained) consider(decoded.frame.get(), decoded.time);
      while (next < queries.size()) {
        const Decoded* decoded = decode_next();
        if (!decoded) break;
        consider(decoded->frame.get(), decoded->time);
      }
      if (next < queries.size() && !previous)
        throw util::IoError("no frame could be decoded from video " + io::av::quoted(file),
                            "the file may be corrupt or truncated");
      for (; next < queries.size(); ++next) chosen[next] = Decoded{io::av::ref_frame(previous.get()), previous_time};

      for (std::size_t i = 0; i < queries.size(); ++i) {
        double distance = std::abs(chosen[i].time - queries[i]);
        if (distance > tolerance_s)
          throw util::DataError(
              fmt::format("video {}: no frame near t={:.6f}s; the nearest frame is at t={:.6f}s, {:.6f}s away "
                          "(tolerance_s={})",
                          io::av::quoted(file), queries[i], chosen[i].time, distance, tolerance_s),
              "the video's frame times do not match the dataset's timestamps (check fps in meta/info.json and "
              "the episode's from_timestamp), or the video is shorter than the episode");
      }
    }

    torch::Tensor unique_frames =
        torch::empty({static_cast<int64_t>(queries.size()), 3, info.height, info.width}, torch::kUInt8);
    for (std::size_t i = 0; i < queries.size(); ++i) {
      torch::Tensor slot = unique_frames[static_cast<int64_t>(i)];
      to_rgb(chosen[i].frame.get(), slot);
    }
    if (found_times) found_times->clear();
    bool identity = queries.size() == times.size();
    std::vector<int64_t> order(times.size());
    for (std::size_t i = 0; i < times.size(); ++i) {
      auto position = std::lower_bound(queries.begin(), queries.end(), times[i]) - queries.begin();
      order[i] = position;
      identity = identity && position == static_cast<int64_t>(i);
      if (found_times) found_times->push_back(chosen[static_cast<std::size_t>(position)].time);
    }
    if (identity) return unique_frames;
    return unique_frames.index_select(0, torch::tensor(order, torch::kLong));
  }
};

VideoReader::VideoReader(const fs::path& file, VideoReaderOptions options)
    : impl_(std::make_unique<Impl>(file, options)) {}
VideoReader::~VideoReader() = default;
VideoReader::VideoReader(VideoReader&&) noexcept = default;
VideoReader& VideoReader::operator=(VideoReader&&) noexcept = default;

const VideoStreamInfo& VideoReader::info() const {
  return impl_->info;
}
const fs::path& VideoReader::path() const {
  return impl_->file;
}
int64_t VideoReader::seeks() const {
  return impl_->seek_count;
}
int64_t VideoReader::frames_decoded() const {
  return impl_->decoded_count;
}

VideoReader::Scan VideoReader::scan_all_frames() {
  Scan scan;
  try {
    impl_->position_at(impl_->first_ticks());
    while (const Impl::Decoded* decoded = impl_->decode_next()) scan.frame_times.push_back(decoded->time);
  } catch (const util::Error& error) {
    scan.error = error.what();
  }
  impl_->retained.clear();  // not a position later queries may continue from
  return scan;
}

torch::Tensor VideoReader::frames_at(std::span<const double> times_s, double tolerance_s,
                                     std::vector<double>* found_times) {
  try {
    return impl_->frames_at(times_s, tolerance_s, found_times);
  } catch (const util::IoError&) {
    // A failed read leaves the demuxer and decoder somewhere undefined: the next call seeks afresh.
    impl_->retained.clear();
    throw;
  }
}

}  // namespace lrhost::data
