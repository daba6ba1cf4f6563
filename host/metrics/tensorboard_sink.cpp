// TensorBoard sink: adapts the event-file writer to logged records; see tensorboard_sink.hpp.
#include "host/metrics/tensorboard_sink.hpp"

#include "host/metrics/tensorboard_writer.hpp"

namespace lrhost::metrics {

TensorBoardSink::TensorBoardSink(std::filesystem::path dir, int64_t first_step)
    : writer_(std::make_unique<TensorBoardWriter>(std::move(dir))), first_step_(first_step) {}

TensorBoardSink::~TensorBoardSink() = default;

void TensorBoardSink::start_if_needed(double wall_time) {
  if (started_) return;
  writer_->start_session(first_step_, wall_time);
  started_ = true;
}

void TensorBoardSink::write(int64_t step, double wall_time, const std::map<std::string, double>& metrics) {
  start_if_needed(wall_time);
  // TensorBoard plots NaN as a gap and infinities off the chart, which is what a user wants to see.
  for (const auto& [name, value] : metrics) writer_->add_scalar(name, step, value, wall_time);
}

void TensorBoardSink::write_text(const std::string& tag, int64_t step, const std::string& text, double wall_time) {
  start_if_needed(wall_time);
  // TensorBoard renders text as Markdown: indenting every line by four spaces shows it verbatim (a
  // JSON config would otherwise lose its line breaks and indentation).
  std::string verbatim = "    ";
  for (char c : text) {
    verbatim += c;
    if (c == '\n') verbatim += "    ";
  }
  writer_->add_text(tag, step, verbatim, wall_time);
}

}  // namespace lrhost::metrics
