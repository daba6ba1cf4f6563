// Least-recently-used cache of open VideoReaders (see video_reader_cache.hpp).
#include "host/data/video/video_reader_cache.hpp"

#include <algorithm>

namespace lrhost::data {

VideoReaderCache::VideoReaderCache(std::size_t capacity, VideoReaderOptions options)
    : capacity_(std::max<std::size_t>(1, capacity)), options_(options) {}

VideoReader& VideoReaderCache::get(const std::filesystem::path& file) {
  // The same file spelled "a/./b.mp4" or "a/b.mp4" is one reader.
  std::string key = file.lexically_normal().string();
  if (auto found = index_.find(key); found != index_.end()) {
    entries_.splice(entries_.begin(), entries_, found->second);
    return *entries_.front().second;
  }
  // Open before evicting: a file that fails to open leaves the cache as it was.
  auto reader = std::make_unique<VideoReader>(file, options_);
  if (entries_.size() >= capacity_) {
    index_.erase(entries_.back().first);
    entries_.pop_back();
  }
  entries_.emplace_front(key, std::move(reader));
  index_[key] = entries_.begin();
  return *entries_.front().second;
}

std::size_t VideoReaderCache::size() const {
  return entries_.size();
}
std::size_t VideoReaderCache::capacity() const {
  return capacity_;
}

void VideoReaderCache::clear() {
  index_.clear();
  entries_.clear();
}

}  // namespace lrhost::data
