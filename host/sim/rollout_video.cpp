// Writing rollout videos; see rollout_video.hpp.
#include "host/sim/rollout_video.hpp"

#include <string>
#include <system_error>

#include "host/io/video_writer.hpp"
#include "host/util/error.hpp"

namespace lrhost::sim {

int64_t write_rollout_video(const std::filesystem::path& file, const torch::Tensor& frames, int fps) {
  const std::string name = "video '" + file.string() + "'";
  if (!frames.defined()) throw util::DataError(name + ": no frames given");
  if (frames.scalar_type() != torch::kByte || frames.dim() != 4 || frames.size(3) != 3 || frames.size(0) < 1)
    throw util::DataError(name + ": frames must be a uint8 tensor [T, H, W, 3] (RGB) with T >= 1, got " +
                          std::string(c10::toString(frames.scalar_type())) + " " + c10::str(frames.sizes()));
  if (fps < 1) throw util::ConfigError(name + ": fps must be >= 1, got " + std::to_string(fps));
  if (file.has_parent_path()) {
    std::error_code error;
    std::filesystem::create_directories(file.parent_path(), error);
    if (error)
      throw util::IoError(name + ": cannot create its folder '" + file.parent_path().string() +
                          "': " + error.message());
  }
  torch::Tensor cpu_frames = frames.to(torch::kCPU).contiguous();
  io::VideoWriter writer(file, static_cast<int>(cpu_frames.size(2)), static_cast<int>(cpu_frames.size(1)), fps);
  for (int64_t t = 0; t < cpu_frames.size(0); ++t) writer.write(cpu_frames[t]);
  writer.finish();
  return cpu_frames.size(0);
}

}  // namespace lrhost::sim
