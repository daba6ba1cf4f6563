// Writes TensorBoard event files (`events.out.tfevents.*`) that `tensorboard --logdir` reads:
// scalars, text, and the session-start marker that hides a crashed run's orphaned steps after a
// resume. Plain C++ with a hand-written protobuf encoder (protobuf_wire.hpp) and CRC32C (crc32c.hpp).
//
// File: `<dir>/events.out.tfevents.<unix seconds, 10 digits>.<hostname>.<pid>.<counter>`, the name
// TensorFlow's writers use (the counter tells apart writers of one process). TensorBoard reads a
// folder's event files in name order, so a resumed run's file (a later timestamp) is read after the
// crashed run's. The file is created on the first write, not by the constructor, so every rank may
// construct a writer and only the ranks that log leave a file.
//
// Record format (TFRecord), one per Event protobuf:
//   uint64 length (LE) | uint32 masked_crc32c(length bytes) (LE) | data | uint32 masked_crc32c(data) (LE)
// The first record is Event{wall_time, step 0, file_version = "brain.Event:2"}. Field numbers were
// read from tensorboard 2.21's compiled descriptors (compat/proto/*_pb2.py; the wheel ships no
// .proto files): Event{wall_time 1 double, step 2 int64, file_version 3 string, summary 5,
// session_log 7 (6 is log_message)}; Summary{value 1}; Summary.Value{tag 1, simple_value 2 float,
// tensor 8, metadata 9}; SummaryMetadata{plugin_data 1}; PluginData{plugin_name 1, content 2};
// TensorProto{dtype 1 (DT_STRING = 7), tensor_shape 2, string_val 8}; SessionLog{status 1, START = 1}.
//
// Resume purge (tensorboard 2.21, backend/event_processing): once a file has declared
// file_version >= 2, an Event with session_log.status == START at step k drops every event already
// read for that run with step >= k (kept: step < k); only the step is used, the START's wall_time
// appears in the logged warning only. Two readers differ:
//   - plugin_event_accumulator.py (what the `tensorboard` server uses): the FIRST START of a run is
//     taken as the initial start and purges nothing; only later STARTs purge, and they purge every
//     tag, scalars and text alike (all are tensors there). So every run must call start_session()
//     when it begins, fresh runs included, or a resumed run's START is the "first" and purges nothing.
//   - event_accumulator.py (the legacy EventAccumulator): every START purges, but only scalars,
//     histograms, images and audio; text (tensor) events at steps >= k stay.
//
// Flush policy: no buffering. Every add_*/start_session call hands its whole record to the kernel
// with one write(2) (page cache, no fsync). Training logs a few events per second at most, so the
// cost is negligible, TensorBoard sees each point as soon as it is logged, a crashed process loses
// nothing already logged, and the destructor has no buffered data whose write could fail unseen.
// After a failed write the file may end in a partial record (readers stop there), so the writer
// closes it and the next event starts a new file.
//
// Errors (folder cannot be created, file cannot be created or written) throw util::IoError naming the
// path; an empty tag throws util::ConfigError.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace lrhost::metrics {

class TensorBoardWriter {
 public:
  // Creates `dir` (and its parents) if needed; opens no file yet.
  explicit TensorBoardWriter(std::filesystem::path dir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  // A point of the scalar chart `tag`; TensorBoard stores it as float32 (simple_value).
  void add_scalar(const std::string& tag, int64_t step, double value, double wall_time);
  // A text entry (Markdown) for TensorBoard's text dashboard; `text` is UTF-8.
  void add_text(const std::string& tag, int64_t step, const std::string& text, double wall_time);
  // SessionLog START at `step`: call once when a run starts (fresh: its first step; resumed: the
  // first step it will log again), before its first add_*; see the header comment for why.
  void start_session(int64_t step, double wall_time);
  // Nothing to do: each event is written out when it is added (see the flush policy above); kept so
  // callers can say where they rely on it.
  void flush();

  const std::filesystem::path& dir() const { return dir_; }
  // The event file; empty until the first write created it.
  const std::filesystem::path& file() const { return file_; }

 private:
  void write_event(std::string_view event, double wall_time);
  void open_file(double wall_time);
  void write_record(std::string_view data);

  std::filesystem::path dir_;
  std::filesystem::path file_;
  int fd_ = -1;  // the open event file; -1 before the first write and after a failed one
};

}  // namespace lrhost::metrics
