// Expansion of LeRobot's path templates from meta/info.json ("data/chunk-{chunk_index:03d}/file-
// {file_index:03d}.parquet", "videos/{video_key}/..."). LeRobot calls Python's str.format on them, so
// we support the subset those templates use: "{name}" and "{name:0Nd}" (zero-padded integers).
#pragma once
#include <map>
#include <string>
#include <variant>

namespace lrhost::data {

using TemplateValue = std::variant<long long, std::string>;

// Throws util::DataError naming `what` (e.g. "meta/info.json data_path") for a placeholder that has
// no value, a format spec other than "0Nd"/"d"/none, or unbalanced braces.
std::string expand_path_template(const std::string& pattern, const std::map<std::string, TemplateValue>& values,
                                 const std::string& what);

}  // namespace lrhost::data
