// A bounded least-recently-used set of open VideoReaders, one set per loader worker thread. Opening
// a video (demuxer, stream info, decoder) costs far more than decoding a few frames, and a worker
// keeps returning to the same few camera files, so readers stay open between samples; the bound keeps
// file handles and decoder memory in check on datasets with many files. Like VideoReader it is not
// thread-safe.
#pragma once

#include "host/data/video/video_reader.hpp"

#include <cstddef>
#include <filesystem>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>

namespace lrhost::data {

class VideoReaderCache {
 public:
  explicit VideoReaderCache(std::size_t capacity, VideoReaderOptions options = {});

  // The open reader of `file`, opened on a miss (evicting the least recently used one when full).
  // The reference stays valid until that reader is evicted by a later get().
  VideoReader& get(const std::filesystem::path& file);

  std::size_t size() const;
  std::size_t capacity() const;
  void clear();

 private:
  using Entry = std::pair<std::string, std::unique_ptr<VideoReader>>;
  std::size_t capacity_;
  VideoReaderOptions options_;
  std::list<Entry> entries_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
};

}  // namespace lrhost::data
