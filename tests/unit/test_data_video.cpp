// Unit tests of host/data/video: mp4 writing with libsvtav1 and libx264 and reading back by timestamp
// (exact frame times, pixels within codec tolerance, nearest-frame choice, tolerance errors, query
// order, forward decoding vs seeking), the reader cache, probe_video, broken and missing files, and
// PNG round trips.
#include <doctest/doctest.h>

#include "host/data/video/png_codec.hpp"
#include "host/data/video/video_reader.hpp"
#include "host/data/video/video_reader_cache.hpp"
#include "host/io/video_writer.hpp"
#include "host/util/error.hpp"
#include "test_support.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

using namespace lrhost;
using namespace lrhost::data;
namespace fs = std::filesystem;

namespace {

using lrhost::test::TempDir;

// Frame k of the test clip, [H,W,3] uint8: smooth gradients whose colour shifts with k plus a moving
// square, so each frame is distinct yet compresses well.
torch::Tensor clip_frame(int k, int width, int height) {
  auto x = torch::arange(width, torch::kFloat).view({1, width});
  auto y = torch::arange(height, torch::kFloat).view({height, 1});
  auto r = (x * (160.0 / width) + 10 * k).expand({height, width});
  auto g = (y * (160.0 / height) + 40).expand({height, width});
  auto b = torch::full({height, width}, 30.0 + 9 * k);
  auto image = torch::stack({r, g, b}, 2).clamp(0, 255);
  int square_x = (4 + 4 * k) % (width - 16), square_y = (8 + 2 * k) % (height - 16);
  image.slice(0, square_y, square_y + 16).slice(1, square_x, square_x + 16).copy_(torch::tensor({235.0, 235.0, 60.0}));
  return image.round().to(torch::kUInt8);
}

double mean_abs_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kFloat) - b.to(torch::kFloat)).abs().mean().item<double>();
}

constexpr int kFrames = 20, kVideoFps = 10, kWidth = 96, kHeight = 64;

fs::path write_clip(const fs::path& file, const std::string& codec, int width = kWidth, int height = kHeight,
                    int frames = kFrames, std::string* used_codec = nullptr) {
  io::VideoWriterOptions options;
  options.codec = codec;
  io::VideoWriter writer(file, width, height, kVideoFps, options);
  for (int k = 0; k < frames; ++k) writer.write(clip_frame(k, width, height));
  writer.finish();
  CHECK(writer.frames_written() == frames);
  if (used_codec) *used_codec = writer.codec();
  return file;
}

std::vector<double> grid_times(int frames) {
  std::vector<double> times;
  for (int k = 0; k < frames; ++k) times.push_back(static_cast<double>(k) / kVideoFps);
  return times;
}

// The whole clip through one encoder: stream facts, exact times, pixels, frame identity, nearest
// choice, tolerance errors, query order, forward decoding vs seeking.
void check_round_trip(const std::string& encoder, const std::string& stream_codec) {
  TempDir dir;
  std::string used;
  fs::path file = write_clip(dir.path / "clip.mp4", encoder, kWidth, kHeight, kFrames, &used);
  CHECK(used == encoder);

  VideoStreamInfo info = probe_video(file);
  CHECK(info.codec == stream_codec);
  CHECK(info.pix_fmt == "yuv420p");
  CHECK(info.width == kWidth);
  CHECK(info.height == kHeight);
  CHECK(info.fps == doctest::Approx(kVideoFps));
  CHECK(info.frame_count == kFrames);
  CHECK(info.duration_s == doctest::Approx(static_cast<double>(kFrames) / kVideoFps).epsilon(0.06));
  CHECK_FALSE(info.has_audio);

  VideoReader reader(file);
  CHECK(reader.info().codec == stream_codec);
  CHECK(reader.path() == file);
  std::vector<double> times = grid_times(kFrames), found;
  torch::Tensor frames = reader.frames_at(times, 1e-4, &found);
  REQUIRE(frames.sizes() == torch::IntArrayRef{kFrames, 3, kHeight, kWidth});
  CHECK((frames.scalar_type() == torch::kUInt8));  // (( )): doctest cannot print ScalarType
  CHECK(frames.is_contiguous());
  REQUIRE(found.size() == times.size());
  std::vector<torch::Tensor> sources;
  for (int k = 0; k < kFrames; ++k) sources.push_back(clip_frame(k, kWidth, kHeight).permute({2, 0, 1}));
  for (int k = 0; k < kFrames; ++k) {
    CAPTURE(k);
    CHECK(found[static_cast<std::size_t>(k)] == doctest::Approx(times[static_cast<std::size_t>(k)]).epsilon(1e-12));
    // Codec tolerance at crf 30 for this smooth content: mean |Δ| below 6 (of 255).
    double own = mean_abs_diff(frames[k], sources[static_cast<std::size_t>(k)]);
    CHECK(own < 6.0);
    // Frame identity: the decoded frame is closer to its own source than to any other.
    for (int other = 0; other < kFrames; ++other)
      if (other != k) CHECK(own < mean_abs_diff(frames[k], sources[static_cast<std::size_t>(other)]));
  }

  // Off-grid queries take the nearest frame when within tolerance.
  std::vector<double> off{5.3 / kVideoFps, 5.7 / kVideoFps, 0.2 / kVideoFps};
  torch::Tensor near = reader.frames_at(off, 0.45 / kVideoFps, &found);
  CHECK(found[0] == doctest::Approx(5.0 / kVideoFps));
  CHECK(found[1] == doctest::Approx(6.0 / kVideoFps));
  CHECK(found[2] == doctest::Approx(0.0));
  CHECK(torch::equal(near[0], frames[5]));
  CHECK(torch::equal(near[1], frames[6]));
  CHECK(torch::equal(near[2], frames[0]));

  // Beyond tolerance: a DataError naming the file, the query and the nearest frame.
  std::vector<double> between{0.54};
  CHECK_THROWS_AS(reader.frames_at(between, 1e-4), util::DataError);
  try {
    reader.frames_at(between, 1e-4);
  } catch (const util::DataError& error) {
    std::string message = error.what();
    CHECK(message.find(file.string()) != std::string::npos);
    CHECK(message.find("t=0.540000") != std::string::npos);
    CHECK(message.find("t=0.500000") != std::string::npos);
    CHECK(message.find("0.0001") != std::string::npos);
  }
  std::vector<double> past_end{static_cast<double>(kFrames) / kVideoFps + 1.0};
  CHECK_THROWS_AS(reader.frames_at(past_end, 1e-4), util::DataError);
  // Slightly before the first frame but within tolerance: frame 0.
  std::vector<double> before_start{-5e-5};
  CHECK(torch::equal(reader.frames_at(before_start, 1e-4)[0], frames[0]));

  // Unsorted queries with duplicates come back in query order.
  std::vector<double> mixed{1.2, 0.0, 1.2, 0.5, 1.9, 0.0};
  torch::Tensor mixed_frames = reader.frames_at(mixed, 1e-4, &found);
  REQUIRE(mixed_frames.size(0) == 6);
  for (std::size_t i = 0; i < mixed.size(); ++i) {
    int k = static_cast<int>(std::lround(mixed[i] * kVideoFps));
    CHECK(found[i] == doctest::Approx(mixed[i]));
    CHECK(torch::equal(mixed_frames[static_cast<int64_t>(i)], frames[k]));
  }
  CHECK(reader.frames_at(std::span<const double>{}, 1e-4).sizes() == torch::IntArrayRef{0, 3, kHeight, kWidth});

  // A loader walking forward through the clip in windows [k-1, k]: decoding continues without
  // seeking, and the frames equal those of the single full decode.
  VideoReader walker(file);
  for (int k = 1; k < kFrames; ++k) {
    std::vector<double> window{static_cast<double>(k - 1) / kVideoFps, static_cast<double>(k) / kVideoFps};
    torch::Tensor got = walker.frames_at(window, 1e-4);
    CHECK(torch::equal(got[0], frames[k - 1]));
    CHECK(torch::equal(got[1], frames[k]));
  }
  CHECK(walker.seeks() == 1);
  CHECK(walker.frames_decoded() == kFrames);
  // Backward jumps seek and still give identical frames.
  for (int k : {3, 17, 0, 11, 2}) {
    std::vector<double> one{static_cast<double>(k) / kVideoFps};
    CHECK(torch::equal(walker.frames_at(one, 1e-4)[0], frames[k]));
  }
  CHECK(walker.seeks() > 1);
}

}  // namespace

TEST_CASE("video round trip with libsvtav1 (AV1 decoded by dav1d)") {
  check_round_trip("libsvtav1", "av1");
}

TEST_CASE("video round trip with libx264 (B-frames, edit list)") {
  check_round_trip("libx264", "h264");
}

TEST_CASE("VideoWriter falls back to libx264 when SVT-AV1 refuses the size") {
  TempDir dir;
  std::string used;
  // SVT-AV1 1.4 wants at least 64 pixels per side.
  fs::path file = write_clip(dir.path / "small.mp4", "libsvtav1", 48, 32, 6, &used);
  CHECK((used == "libx264" || used == "libsvtav1"));
  VideoReader reader(file);
  CHECK(reader.info().width == 48);
  CHECK(reader.info().height == 32);
  torch::Tensor frames = reader.frames_at(grid_times(6), 1e-4);
  for (int k = 0; k < 6; ++k) CHECK(mean_abs_diff(frames[k], clip_frame(k, 48, 32).permute({2, 0, 1})) < 8.0);
}

TEST_CASE("other pixel formats decode to RGB") {
  TempDir dir;
  struct Case {
    std::string codec, pix_fmt;
  };
  for (const Case& c : {Case{"libsvtav1", "yuv420p10le"}, Case{"libx264", "yuv444p"}}) {
    CAPTURE(c.pix_fmt);
    fs::path file = dir.path / (c.pix_fmt + ".mp4");
    io::VideoWriterOptions options;
    options.codec = c.codec;
    options.fallback_codec = "";
    options.pix_fmt = c.pix_fmt;
    std::vector<torch::Tensor> sources;
    {
      io::VideoWriter writer(file, kWidth, kHeight, kVideoFps, options);
      for (int k = 0; k < 6; ++k) {
        torch::Tensor image = clip_frame(k, kWidth, kHeight);
        sources.push_back(image.permute({2, 0, 1}));
        writer.write(image);
      }
      writer.finish();
    }
    CHECK(probe_video(file).pix_fmt == c.pix_fmt);
    VideoReader reader(file);
    torch::Tensor frames = reader.frames_at(grid_times(6), 1e-4);
    for (int k = 0; k < 6; ++k) CHECK(mean_abs_diff(frames[k], sources[static_cast<std::size_t>(k)]) < 6.0);
  }
}

TEST_CASE("VideoWriter rejects bad input and removes an unfinished file") {
  TempDir dir;
  CHECK_THROWS_AS(io::VideoWriter(dir.path / "odd.mp4", 95, 64, kVideoFps), util::DataError);
  {
    io::VideoWriter writer(dir.path / "partial.mp4", kWidth, kHeight, kVideoFps);
    CHECK_THROWS_AS(writer.write(torch::zeros({kHeight, kWidth, 3}, torch::kFloat)), util::DataError);
    CHECK_THROWS_AS(writer.write(torch::zeros({kWidth, kHeight, 3}, torch::kUInt8)), util::DataError);
    writer.write(clip_frame(0, kWidth, kHeight));
    CHECK(fs::exists(dir.path / "partial.mp4"));
  }
  CHECK_FALSE(fs::exists(dir.path / "partial.mp4"));
  {  // no frames: finish() refuses, and neither it nor the destructor hangs in SVT-AV1
    io::VideoWriter empty(dir.path / "empty.mp4", kWidth, kHeight, kVideoFps);
    CHECK_THROWS_AS(empty.finish(), util::DataError);
  }
  { io::VideoWriter unused(dir.path / "empty.mp4", kWidth, kHeight, kVideoFps); }
  CHECK_FALSE(fs::exists(dir.path / "empty.mp4"));
  CHECK_THROWS_AS(io::VideoWriter(dir.path / "no_such_dir" / "x.mp4", kWidth, kHeight, kVideoFps), util::IoError);
}

TEST_CASE("VideoReaderCache keeps the most recently used readers") {
  TempDir dir;
  fs::path a = write_clip(dir.path / "a.mp4", "libx264", kWidth, kHeight, 4);
  fs::path b = dir.path / "b.mp4", c = dir.path / "c.mp4";
  fs::copy_file(a, b);
  fs::copy_file(a, c);
  VideoReaderCache cache(2);
  VideoReader* reader_a = &cache.get(a);
  CHECK(reader_a->path() == a);
  VideoReader* reader_b = &cache.get(b);
  CHECK(cache.size() == 2);
  CHECK(&cache.get(a) == reader_a);                         // hit; a is now the most recent
  CHECK(&cache.get(dir.path / "." / "a.mp4") == reader_a);  // same file, other spelling
  VideoReader* reader_c = &cache.get(c);                    // evicts b, the least recently used
  CHECK(cache.size() == 2);
  CHECK(&cache.get(a) == reader_a);
  CHECK(&cache.get(c) == reader_c);
  CHECK(cache.get(b).path() == b);  // reopened, evicting a
  (void)reader_b;
  CHECK(cache.size() == 2);
  CHECK_THROWS_AS(cache.get(dir.path / "missing.mp4"), util::IoError);
  CHECK(cache.size() == 2);
  std::vector<double> t{0.1};
  CHECK(cache.get(c).frames_at(t, 1e-4).size(0) == 1);
}

TEST_CASE("missing, truncated and garbage video files raise errors") {
  TempDir dir;
  fs::path missing = dir.path / "nope.mp4";
  CHECK_THROWS_AS(VideoReader{missing}, util::IoError);
  CHECK_THROWS_AS(probe_video(missing), util::IoError);
  try {
    probe_video(missing);
  } catch (const util::IoError& error) {
    CHECK(std::string(error.what()).find(missing.string()) != std::string::npos);
  }

  fs::path good = write_clip(dir.path / "good.mp4", "libsvtav1");
  auto truncated_copy = [&](const std::string& name, std::uintmax_t size) {
    fs::path file = dir.path / name;
    fs::copy_file(good, file);
    fs::resize_file(file, size);
    return file;
  };
  std::vector<double> all = grid_times(kFrames);
  // Reading every frame of a broken file must end in one of our errors, never a crash.
  auto read_all = [&](const fs::path& file) {
    VideoReader reader(file);
    reader.frames_at(all, 1e-4);
  };
  // The message of the error a call raises ("" when it raises none), checking it is one of ours.
  auto error_of = [](auto&& call) -> std::string {
    try {
      call();
    } catch (const util::Error& error) {
      return error.what();
    }
    return "";
  };
  fs::path half = truncated_copy("half.mp4", fs::file_size(good) / 2);
  CHECK(error_of([&] { read_all(half); }).find(half.string()) != std::string::npos);
  fs::path head = truncated_copy("head.mp4", 100);
  CHECK_THROWS_AS(read_all(head), util::IoError);
  CHECK(error_of([&] { read_all(head); }).find(head.string()) != std::string::npos);

  fs::path garbage = dir.path / "garbage.mp4";
  {
    std::mt19937 random(7);
    std::ofstream out(garbage, std::ios::binary);
    for (int i = 0; i < 50000; ++i) out.put(static_cast<char>(random() & 0xFF));
  }
  CHECK_THROWS_AS(read_all(garbage), util::IoError);
  CHECK(error_of([&] { read_all(garbage); }).find(garbage.string()) != std::string::npos);
  CHECK_THROWS_AS(probe_video(garbage), util::IoError);
  CHECK_THROWS_AS(probe_video(dir.path), util::IoError);
}

TEST_CASE("PNG round trips are exact") {
  torch::manual_seed(3);
  for (int channels : {1, 2, 3, 4}) {
    CAPTURE(channels);
    torch::Tensor image = torch::randint(0, 256, {17, 23, channels}, torch::kUInt8);
    std::string bytes = encode_png(image);
    CHECK(bytes.substr(1, 3) == "PNG");
    torch::Tensor decoded = decode_png(bytes, "test image");
    REQUIRE(decoded.sizes() == torch::IntArrayRef{channels, 17, 23});
    CHECK(torch::equal(decoded, image.permute({2, 0, 1})));
  }
  torch::Tensor gray = torch::randint(0, 256, {5, 7}, torch::kUInt8);
  CHECK(torch::equal(decode_png(encode_png(gray), "gray")[0], gray));
  CHECK_THROWS_AS(encode_png(torch::zeros({4, 4, 3}, torch::kFloat)), util::DataError);
  CHECK_THROWS_AS(encode_png(torch::zeros({4, 4, 5}, torch::kUInt8)), util::DataError);
}

TEST_CASE("garbage PNG bytes raise IoError naming the source") {
  CHECK_THROWS_WITH_AS(decode_png("hello world", "images/x row 3"), doctest::Contains("images/x row 3"), util::IoError);
  CHECK_THROWS_AS(decode_png("", "empty"), util::IoError);
  std::string bytes = encode_png(torch::full({8, 8, 3}, 77, torch::kUInt8));
  CHECK_THROWS_AS(decode_png(bytes.substr(0, 40), "truncated"), util::IoError);
  std::string corrupted = bytes;
  for (std::size_t i = 16; i < corrupted.size(); ++i) corrupted[i] = static_cast<char>(corrupted[i] ^ 0x5A);
  CHECK_THROWS_AS(decode_png(corrupted, "corrupted"), util::IoError);
}

// Decode speed on one thread (not a test: run with --no-skip to see the figure).
TEST_CASE("video decode speed" * doctest::skip()) {
  TempDir dir;
  constexpr int frames = 300, width = 640, height = 480;
  for (const std::string codec : {"libsvtav1", "libx264"}) {
    fs::path file = dir.path / (codec + ".mp4");
    io::VideoWriterOptions options;
    options.codec = codec;
    io::VideoWriter writer(file, width, height, 30, options);
    for (int k = 0; k < frames; ++k) writer.write(clip_frame(k, width, height));
    writer.finish();
    std::vector<double> times;
    for (int k = 0; k < frames; ++k) times.push_back(k / 30.0);
    VideoReader reader(file);
    auto start = std::chrono::steady_clock::now();
    torch::Tensor decoded = reader.frames_at(times, 1e-4);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    MESSAGE(codec << " " << width << "x" << height << ": " << frames / seconds << " frames/s (decode + RGB, 1 thread)");
  }
}
