// TensorBoard event-file writer: Event protobufs in TFRecord framing (see tensorboard_writer.hpp).
#include "host/metrics/tensorboard_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <limits>
#include <system_error>

#include "host/metrics/crc32c.hpp"
#include "host/metrics/protobuf_wire.hpp"
#include "host/util/error.hpp"

namespace lrhost::metrics {

namespace fs = std::filesystem;

namespace {

// Field numbers of tensorboard/compat/proto (event.proto, summary.proto, tensor.proto, types.proto).
namespace event_field {
constexpr uint32_t wall_time = 1, step = 2, file_version = 3, summary = 5, session_log = 7;
}
namespace value_field {
constexpr uint32_t tag = 1, simple_value = 2, tensor = 8, metadata = 9;
}
constexpr uint32_t kSummaryValue = 1;          // Summary.value
constexpr uint32_t kMetadataPluginData = 1;    // SummaryMetadata.plugin_data
constexpr uint32_t kPluginDataPluginName = 1;  // SummaryMetadata.PluginData.plugin_name
namespace tensor_field {
constexpr uint32_t dtype = 1, tensor_shape = 2, string_val = 8;
}
constexpr int64_t kDtypeString = 7;                    // DataType.DT_STRING
constexpr uint32_t kSessionLogStatus = 1;              // SessionLog.status
constexpr int64_t kSessionStatusStart = 1;             // SessionLog.SessionStatus.START
constexpr const char* kFileVersion = "brain.Event:2";  // version 2: purge on SessionLog START

// Distinguishes event files of writers created by one process within one second.
std::atomic<int> file_counter{0};

// The Event fields every event has, before its oneof payload.
std::string event_header(int64_t step, double wall_time) {
  std::string event;
  wire::put_double_field(event, event_field::wall_time, wall_time);
  wire::put_varint_field(event, event_field::step, step);
  return event;
}

// Event{..., summary = Summary{value = [value]}}.
std::string summary_event(int64_t step, double wall_time, const std::string& value) {
  std::string summary;
  wire::put_bytes_field(summary, kSummaryValue, value);
  std::string event = event_header(step, wall_time);
  wire::put_bytes_field(event, event_field::summary, summary);
  return event;
}

void check_tag(const std::string& tag, const char* method) {
  if (tag.empty())
    throw util::ConfigError(std::string("TensorBoardWriter::") + method +
                            ": empty tag (expected a name such as 'train/loss')");
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  std::string host(name);
  for (char& c : host)
    if (c == '/') c = '_';  // never a path separator in the file name
  return host;
}

// double -> float32 rounded to nearest, with values that round beyond float32's range mapped to
// +-infinity explicitly (as numpy.float32 does; a plain conversion of an out-of-range double is
// undefined behaviour). NaN stays NaN.
float to_float32(double value) {
  constexpr double kRoundsToInfinity = 0x1.ffffffp127;  // FLT_MAX + half an ulp (ties go to even: inf)
  if (value >= kRoundsToInfinity) return std::numeric_limits<float>::infinity();
  if (value <= -kRoundsToInfinity) return -std::numeric_limits<float>::infinity();
  return static_cast<float>(value);
}

std::string errno_text() {
  return std::strerror(errno);
}

}  // namespace

TensorBoardWriter::TensorBoardWriter(fs::path dir) : dir_(std::move(dir)) {
  std::error_code error;
  fs::create_directories(dir_, error);
  if (error || !fs::is_directory(dir_))
    throw util::IoError("cannot create TensorBoard folder '" + dir_.string() +
                        "': " + (error ? error.message() : std::string("exists and is not a folder")));
}

TensorBoardWriter::~TensorBoardWriter() {
  // Nothing is buffered in this process (each record went out with write(2)): closing loses nothing.
  if (fd_ >= 0) ::close(fd_);
}

void TensorBoardWriter::add_scalar(const std::string& tag, int64_t step, double value, double wall_time) {
  check_tag(tag, "add_scalar");
  std::string summary_value;
  wire::put_bytes_field(summary_value, value_field::tag, tag);
  wire::put_float_field(summary_value, value_field::simple_value, to_float32(value));
  write_event(summary_event(step, wall_time, summary_value), wall_time);
}

void TensorBoardWriter::add_text(const std::string& tag, int64_t step, const std::string& text, double wall_time) {
  check_tag(tag, "add_text");
  // The text plugin's layout (tensorboard/plugins/text/summary_v2.py text_pb): metadata names the
  // plugin (its content, a TextPluginData with version 0, encodes to nothing), and the value is a
  // scalar DT_STRING tensor.
  std::string plugin_data;
  wire::put_bytes_field(plugin_data, kPluginDataPluginName, "text");
  std::string metadata;
  wire::put_bytes_field(metadata, kMetadataPluginData, plugin_data);
  std::string tensor;
  wire::put_varint_field(tensor, tensor_field::dtype, kDtypeString);
  wire::put_bytes_field(tensor, tensor_field::tensor_shape, "");  // no dims: a scalar
  wire::put_bytes_field(tensor, tensor_field::string_val, text);

  std::string summary_value;
  wire::put_bytes_field(summary_value, value_field::tag, tag);
  wire::put_bytes_field(summary_value, value_field::metadata, metadata);
  wire::put_bytes_field(summary_value, value_field::tensor, tensor);
  write_event(summary_event(step, wall_time, summary_value), wall_time);
}

void TensorBoardWriter::start_session(int64_t step, double wall_time) {
  std::string session_log;
  wire::put_varint_field(session_log, kSessionLogStatus, kSessionStatusStart);
  std::string event = event_header(step, wall_time);
  wire::put_bytes_field(event, event_field::session_log, session_log);
  write_event(event, wall_time);
}

// Each record was handed to the kernel by write(2) when it was added; nothing is left to flush.
void TensorBoardWriter::flush() {}

void TensorBoardWriter::write_event(std::string_view event, double wall_time) {
  if (fd_ < 0) open_file(wall_time);
  write_record(event);
}

// The file_version event takes the wall time of the event that caused the open: TensorBoard shows
// the first event's time as the run's start, and tests get reproducible files.
void TensorBoardWriter::open_file(double wall_time) {
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  char stamp[32];
  std::snprintf(stamp, sizeof(stamp), "%010lld", static_cast<long long>(seconds));
  const fs::path file = dir_ / ("events.out.tfevents." + std::string(stamp) + "." + host_name() + "." +
                                std::to_string(::getpid()) + "." + std::to_string(file_counter++));
  // O_EXCL: never append to or truncate another writer's file.
  fd_ = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) throw util::IoError("cannot create TensorBoard event file '" + file.string() + "': " + errno_text());
  file_ = file;
  std::string event = event_header(0, wall_time);
  wire::put_bytes_field(event, event_field::file_version, kFileVersion);
  write_record(event);
}

void TensorBoardWriter::write_record(std::string_view data) {
  std::string length;
  wire::put_fixed64(length, data.size());
  std::string record = length;
  wire::put_fixed32(record, masked_crc32c(length));
  record.append(data);
  wire::put_fixed32(record, masked_crc32c(data));
  // One write(2) per record, repeated only for a partial write or a signal.
  for (size_t written = 0; written < record.size();) {
    const ssize_t count = ::write(fd_, record.data() + written, record.size() - written);
    if (count < 0 && errno == EINTR) continue;
    if (count <= 0) {
      const std::string reason = count < 0 ? errno_text() : "nothing written";
      // The file may now end in a partial record, where readers stop: the next event starts a new file.
      ::close(fd_);
      fd_ = -1;
      throw util::IoError("cannot write TensorBoard event file '" + file_.string() + "': " + reason);
    }
    written += static_cast<size_t>(count);
  }
}

}  // namespace lrhost::metrics
