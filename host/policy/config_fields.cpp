// Strict reading of the policy configs' fields by member type; see config_fields.hpp.
#include "host/policy/config_fields.hpp"

#include <algorithm>
#include <cmath>

#include "host/policy/peft/peft_settings.hpp"
#include "host/util/error.hpp"
#include "host/util/strings.hpp"

namespace lrhost::policy {

FieldReader::FieldReader(const nlohmann::json& table, std::string where, const PolicyFeatures& dataset)
    : table_(table),
      where_(std::move(where)),
      dataset_(dataset),
      reader_(table, where_),
      fields_(reader_, table, where_) {
  // The recipe's LoRA settings ride in every policy table; PeftSettings::read checks them where they
  // are applied (ckpt::load_pretrained), and config.json never holds them.
  reader_.allow(kPeftKey);
}

const nlohmann::json* FieldReader::value_of(const std::string& key, const void* member) {
  const auto* value = fields_.nullable(key);  // marks the key as known
  if (value) given_.insert(member);
  return value;
}

void FieldReader::operator()(const std::string& key, int64_t& value, const FieldTraits&) {
  if (value_of(key, &value)) value = reader_.integer(key, value);
}

void FieldReader::operator()(const std::string& key, double& value, const FieldTraits&) {
  if (value_of(key, &value)) value = reader_.number(key, value);
}

void FieldReader::operator()(const std::string& key, bool& value, const FieldTraits& traits) {
  if (!value_of(key, &value)) return;
  value = traits.bool_or_int ? fields_.bool_or_int(key, value) : reader_.boolean(key, value);
}

void FieldReader::operator()(const std::string& key, std::string& value, const FieldTraits& traits) {
  if (!value_of(key, &value)) return;
  value = reader_.string(key, value);
  if (traits.one_of.size() == 0) return;
  std::vector<std::string> valid(traits.one_of.begin(), traits.one_of.end());
  if (std::find(valid.begin(), valid.end(), value) == valid.end())
    throw util::ConfigError(where_ + ": '" + key + "' must be one of " + util::quoted_list(valid) + ", got '" + value +
                            "'");
}

// Integral JSON numbers: Lua tables deliver integers as numbers (4.0).
std::vector<int64_t> FieldReader::integers(const std::string& key, const nlohmann::json& value,
                                           const FieldTraits& traits, const char* expected) {
  if (traits.expected) expected = traits.expected;
  if (!value.is_array() || (traits.length && value.size() != traits.length)) fields_.wrong_type(key, expected, value);
  std::vector<int64_t> result;
  for (const auto& element : value) {
    if (!element.is_number() || std::floor(element.get<double>()) != element.get<double>())
      fields_.wrong_type(key, expected, value);
    result.push_back(element.get<int64_t>());
  }
  return result;
}

void FieldReader::operator()(const std::string& key, std::vector<int64_t>& value, const FieldTraits& traits) {
  const auto* given = value_of(key, &value);
  if (given)
    value = integers(key, *given, traits, traits.null_is_empty ? "a list of integers or null" : "a list of integers");
  else if (traits.null_is_empty && table_.is_object() && table_.contains(key))
    value.clear();  // an explicit null
}

void FieldReader::operator()(const std::string& key, std::vector<double>& value, const FieldTraits&) {
  if (value_of(key, &value)) value = reader_.number_list(key, value);
}

void FieldReader::operator()(const std::string& key, std::optional<std::string>& value, const FieldTraits& traits) {
  // Absent or null keeps the member's default, as for every other field.
  if (value_of(key, &value)) value = fields_.optional_string(key);
  if (traits.text_null && value && (value->empty() || *value == "null" || *value == "None")) value.reset();
}

void FieldReader::operator()(const std::string& key, std::optional<bool>& value, const FieldTraits&) {
  // Absent or null keeps the member's default, as for every other field.
  if (value_of(key, &value)) value = fields_.optional_bool(key);
}

void FieldReader::operator()(const std::string& key, std::optional<double>& value, const FieldTraits&) {
  // Absent or null keeps the member's default, as for every other field.
  if (value_of(key, &value)) value = fields_.optional_number(key);
}

void FieldReader::operator()(const std::string& key, std::optional<int64_t>& value, const FieldTraits&) {
  // Absent or null keeps the member's default, as for every other field.
  if (value_of(key, &value)) value = fields_.optional_integer(key);
}

void FieldReader::operator()(const std::string& key, std::optional<std::vector<std::string>>& value,
                             const FieldTraits&) {
  // Absent or null keeps the member's default, as for every other field.
  if (value_of(key, &value)) value = fields_.optional_strings(key);
}

void FieldReader::operator()(const std::string& key, std::optional<std::vector<int64_t>>& value,
                             const FieldTraits& traits) {
  const auto* given = value_of(key, &value);
  if (given)
    value = integers(key, *given, traits, "a list of integers or null");
  else
    value.reset();
}

void FieldReader::operator()(const std::string& key, NormalizationMapping& value, const FieldTraits&) {
  value_of(key, &value);
  value = fields_.normalization_mapping(key, value);
}

void FieldReader::operator()(const std::string& key, std::vector<PolicyFeature>& value, const FieldTraits& traits) {
  value_of(key, &value);
  value = fields_.features(key, traits.dataset ? dataset_.*traits.dataset : value);
}

void FieldReader::operator()(const std::string& key, AlwaysNull&, const FieldTraits& traits) {
  const auto* given = fields_.nullable(key);
  if (given)
    throw util::NotImplemented(where_ + ": '" + key + "' = " + given->dump() + ": " +
                               (traits.refusal ? traits.refusal : "only null is supported in lrhost"));
}

}  // namespace lrhost::policy
