// Reads a component's options (policy, optimizer, scheduler, ...) out of a JSON config table with
// defaults and type checks, and rejects keys the component does not know. Every error names the
// component and the key, so `optimizer.betas` typos fail loudly instead of being ignored.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "host/util/name_table.hpp"

namespace lrhost::config {

class ConfigReader {
 public:
  // `where` names the component in messages, e.g. "policy 'mlp'" or "optimizer 'adamw'".
  ConfigReader(const nlohmann::json& table, std::string where);
  // The reader keeps a reference to `table`: a temporary would dangle (keys read back as garbage).
  ConfigReader(nlohmann::json&& table, std::string where) = delete;

  double number(const std::string& key, double fallback);
  double positive_number(const std::string& key, double fallback);
  int64_t integer(const std::string& key, int64_t fallback);
  int64_t positive_integer(const std::string& key, int64_t fallback);
  bool boolean(const std::string& key, bool fallback);
  std::string string(const std::string& key, const std::string& fallback);
  // A string that must be one of `valid`.
  std::string choice(const std::string& key, const std::string& fallback, const std::vector<std::string>& valid);
  // An enum value by its name in `names` (util/name_table.hpp); the error lists the table's names.
  template <class Enum, std::size_t N>
  Enum choice(const std::string& key, Enum fallback, const util::NameTable<Enum, N>& names) {
    return names.parse(string(key, names.name(fallback)), where_ + ": '" + key + "'");
  }
  std::vector<int64_t> integer_list(const std::string& key, const std::vector<int64_t>& fallback);
  std::vector<double> number_list(const std::string& key, const std::vector<double>& fallback);
  std::optional<int64_t> optional_integer(const std::string& key);
  std::optional<double> optional_number(const std::string& key);
  // Marks a key as known without reading it (read elsewhere).
  void allow(const std::string& key);

  // Throws if the table has keys nobody read, listing the valid ones.
  void reject_unknown() const;

 private:
  const nlohmann::json* find(const std::string& key);
  [[noreturn]] void fail(const std::string& key, const std::string& expected) const;

  const nlohmann::json& table_;
  std::string where_;
  std::set<std::string> known_;
};

}  // namespace lrhost::config
