// Field lists of the policy configs, written once: each config declares
// `template <class Self, class F> static void fields(Self& c, F&& f)`, calling
// f("json_name", c.member, {traits}) for every field in LeRobot's order, and the visitors here drive
// everything that used to repeat the names: strict reading from a recipe table or a config.json
// (FieldReader), config.json writing in that order (write_config_fields), and the names of the fields
// that shape the weights (shape_fields, for the fine-tuning override check). What a visitor would
// make harder to read — LeRobot's __post_init__ and validate checks, derived values — stays in each
// config's from_json / validate by hand.
#pragma once
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "host/config/config_reader.hpp"
#include "host/policy/policy_features.hpp"
#include "host/policy/pretrained_config.hpp"
#include "host/util/error.hpp"

namespace lrhost::policy {

// What a field needs beyond what its member's type says. Given as designated initializers, e.g.
// f("dim_model", c.dim_model, {.shapes_weights = true}); a FieldTraits only lives for that call.
struct FieldTraits {
  // A pretrained policy cannot change it: its weights' shapes or names follow from it.
  bool shapes_weights = false;
  // lrhost's own option: read from recipes and listed by to_recipe_json, never in config.json
  // (LeRobot's config class would reject it).
  bool lrhost_only = false;
  // A LeRobot `int = False` field: config.json holds false/true, and draccus takes 0/1 as well.
  bool bool_or_int = false;
  // A string field whose value must be one of these.
  std::initializer_list<std::string_view> one_of;
  // A list field of exactly this many entries (0: any).
  std::size_t length = 0;
  // A list field that null empties (absent keeps the default) and that is written as null when empty.
  bool null_is_empty = false;
  // A nullable string a recipe can set and unset: Lua tables cannot hold null, so the shipped recipes
  // hold "" for it, and a command line types null (or LeRobot's None); each of the three reads as null.
  bool text_null = false;
  // The wording of the expected type in errors, when the member type's own is not precise enough.
  const char* expected = nullptr;
  // A feature list: the dataset's side used when the table gives none (&PolicyFeatures::inputs).
  std::vector<PolicyFeature> PolicyFeatures::*dataset = nullptr;
  // An AlwaysNull field: why a value other than null is refused (util::NotImplemented).
  const char* refusal = nullptr;
};

// A LeRobot field that lrhost supports only as null (a feature it does not implement): config.json
// gets null, and any other value is refused with FieldTraits::refusal.
struct AlwaysNull {
  bool operator==(const AlwaysNull&) const = default;
};

// Reads fields strictly from a policy table: the table's value when present and not null, else the
// member keeps its default. Errors are util::ConfigErrors naming `where`, the key and the expected
// type; finish() rejects keys no field read (suggesting the nearest).
class FieldReader {
 public:
  // `dataset` fills feature lists the table leaves empty. The reader keeps a reference to `table`
  // (as ConfigReader does), so the table must outlive it.
  FieldReader(const nlohmann::json& table, std::string where, const PolicyFeatures& dataset = {});
  FieldReader(nlohmann::json&& table, std::string where, const PolicyFeatures& dataset = {}) = delete;

  // Accepts the "type" key, which must name this policy when present.
  void expect_type(const std::string& type) { fields_.expect_type(type); }
  // Throws for keys that no field read.
  void finish() const { reader_.reject_unknown(); }
  // Whether the table gave the field read into `member` (present and not null).
  bool given(const void* member) const { return given_.count(member) != 0; }

  void operator()(const std::string& key, int64_t& value, const FieldTraits& traits = {});
  void operator()(const std::string& key, double& value, const FieldTraits& traits = {});
  void operator()(const std::string& key, bool& value, const FieldTraits& traits = {});
  void operator()(const std::string& key, std::string& value, const FieldTraits& traits = {});
  void operator()(const std::string& key, std::vector<int64_t>& value, const FieldTraits& traits = {});
  void operator()(const std::string& key, std::vector<double>& value, const FieldTraits& traits = {});
  void operator()(const std::string& key, std::optional<std::string>& value, const FieldTraits& traits = {});
  void operator()(const std::string& key, std::optional<bool>& value, const FieldTraits& traits = {});
  void operator()(const std::string& key, std::optional<double>& value, const FieldTraits& traits = {});
  void operator()(const std::string& key, std::optional<int64_t>& value, const FieldTraits& traits = {});
  void operator()(const std::string& key, std::optional<std::vector<std::string>>& value,
                  const FieldTraits& traits = {});
  void operator()(const std::string& key, std::optional<std::vector<int64_t>>& value, const FieldTraits& traits = {});
  // Nested objects keep their hand-written readers (PolicyFieldReader): a per-entry visitor would
  // only move their canonical ordering and per-entry messages elsewhere.
  void operator()(const std::string& key, NormalizationMapping& value, const FieldTraits& traits = {});
  void operator()(const std::string& key, std::vector<PolicyFeature>& value, const FieldTraits& traits = {});
  void operator()(const std::string& key, AlwaysNull& value, const FieldTraits& traits = {});

 private:
  // The table's value for `key`, or nullptr when absent or null; marks the key as known.
  const nlohmann::json* value_of(const std::string& key, const void* member);
  std::vector<int64_t> integers(const std::string& key, const nlohmann::json& value, const FieldTraits& traits,
                                const char* expected);

  const nlohmann::json& table_;
  std::string where_;
  PolicyFeatures dataset_;
  config::ConfigReader reader_;
  PolicyFieldReader fields_;
  std::set<const void*> given_;
};

// Writes fields into a config.json object in visiting order; lrhost-only fields only when asked.
class FieldWriter {
 public:
  FieldWriter(nlohmann::ordered_json& out, bool with_lrhost_only) : out_(out), with_lrhost_only_(with_lrhost_only) {}

  template <class T>
  void operator()(const std::string& key, const T& value, const FieldTraits& traits = {}) {
    if (traits.lrhost_only && !with_lrhost_only_) return;
    out_[key] = json_of(value, traits);
  }

 private:
  template <class T>
  static nlohmann::ordered_json json_of(const T& value, const FieldTraits&) {
    return nlohmann::ordered_json(value);
  }
  template <class T>
  static nlohmann::ordered_json json_of(const std::optional<T>& value, const FieldTraits&) {
    return optional_json(value);
  }
  template <class T>
  static nlohmann::ordered_json json_of(const std::vector<T>& value, const FieldTraits& traits) {
    if (traits.null_is_empty && value.empty()) return nullptr;
    return nlohmann::ordered_json(value);
  }
  static nlohmann::ordered_json json_of(const NormalizationMapping& value, const FieldTraits&) {
    return normalization_mapping_json(value);
  }
  static nlohmann::ordered_json json_of(const std::vector<PolicyFeature>& value, const FieldTraits&) {
    return PolicyFeatures::list_to_json(value);
  }
  static nlohmann::ordered_json json_of(const AlwaysNull&, const FieldTraits&) { return nullptr; }

  nlohmann::ordered_json& out_;
  bool with_lrhost_only_;
};

// PreTrainedConfig's fields (configs/policies.py), first in every LeRobot policy's config.json.
template <class Self, class F>
void PretrainedConfigFields::fields(Self& c, F&& f, bool n_obs_steps_shapes_weights) {
  f("n_obs_steps", c.n_obs_steps, {.shapes_weights = n_obs_steps_shapes_weights});
  f("input_features", c.input_features, {.dataset = &PolicyFeatures::inputs});
  f("output_features", c.output_features, {.dataset = &PolicyFeatures::outputs});
  f("device", c.device);
  f("use_amp", c.use_amp);
  f("use_peft", c.use_peft);
  f("push_to_hub", c.push_to_hub);
  f("repo_id", c.repo_id);
  f("private", c.private_repo);
  f("tags", c.tags);
  f("license", c.license);
  f("pretrained_path", c.pretrained_path);
  f("pretrained_revision", c.pretrained_revision);
}

// Reads every field of `config` from `reader` (in declared order).
template <class Config>
void read_config_fields(Config& config, FieldReader& reader) {
  Config::fields(config, reader);
  // use_peft = true reaches a config only when typed by hand: an adapter folder's is cleared by
  // ckpt::build_inputs, which attaches the adapters itself.
  if constexpr (std::is_base_of_v<PretrainedConfigFields, Config>)
    if (config.use_peft)
      throw util::ConfigError(
          "policy: 'use_peft' = true without LoRA adapters to load (typed by hand it would not train adapters: "
          "LeRobot's lerobot#3975 trap)",
          "use_peft marks a pretrained folder that holds adapters (adapter_config.json); to train adapters set "
          "policy.peft.method_type=LORA (lerobot-train: --peft.*)");
}

// config.json content: "type" first, then every field in declared order; with_lrhost_only adds
// lrhost's own options where they are declared (the fields a recipe may set).
template <class Config>
nlohmann::ordered_json write_config_fields(const Config& config, const std::string& type,
                                           bool with_lrhost_only = false) {
  nlohmann::ordered_json out;
  if (!type.empty()) out["type"] = type;
  FieldWriter writer(out, with_lrhost_only);
  Config::fields(config, writer);
  return out;
}

// The names of the fields in declared order: all, or those with a trait (e.g. shapes_weights).
template <class Config>
std::vector<std::string> config_field_names(bool FieldTraits::*only = nullptr) {
  std::vector<std::string> names;
  const Config config{};
  Config::fields(config, [&](const std::string& key, const auto&, const FieldTraits& traits = {}) {
    if (!only || traits.*only) names.push_back(key);
  });
  return names;
}

}  // namespace lrhost::policy
