#include "config/hps.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <sstream>

#include "core/text_file.hpp"

namespace spindle::config {
namespace {

constexpr std::array<std::string_view, 8> kTableKeys = {
    "cache_fraction", "hit_rate_threshold", "default_value",       "slabs_per_set",
    "vdb_partitions", "overflow_margin",    "overflow_resolution", "eviction_policy"};

status read_number(const toml::table& t, std::string_view key, double& out,
                   std::string_view where) {
  if (const toml::node* n = t.get(key)) {
    auto v = n->value<double>();
    if (!v) return make_error(errc::invalid_argument, "{}.{} must be a number", where, key);
    out = *v;
  }
  return status::ok();
}

template <class T>
status read_count(const toml::table& t, std::string_view key, T& out, std::string_view where) {
  if (const toml::node* n = t.get(key)) {
    auto v = n->value<std::int64_t>();
    if (!v || *v < 1)
      return make_error(errc::invalid_argument, "{}.{} must be an integer >= 1", where, key);
    out = T(*v);
  }
  return status::ok();
}

status validate_table(const hps_table_config& c, std::string_view where) {
  if (!(c.cache_fraction > 0 && c.cache_fraction <= 1))
    return make_error(errc::invalid_argument, "{}.cache_fraction = {}: must be in (0, 1]", where,
                      c.cache_fraction);
  if (!(c.hit_rate_threshold >= 0 && c.hit_rate_threshold <= 1))
    return make_error(errc::invalid_argument, "{}.hit_rate_threshold = {}: must be in [0, 1]",
                      where, c.hit_rate_threshold);
  if (!(c.overflow_resolution > 0 && c.overflow_resolution <= 1))
    return make_error(errc::invalid_argument, "{}.overflow_resolution = {}: must be in (0, 1]",
                      where, c.overflow_resolution);
  if (c.slabs_per_set > 64)
    return make_error(errc::invalid_argument, "{}.slabs_per_set = {}: must be 1..64", where,
                      c.slabs_per_set);
  for (auto p : {"evict_oldest", "evict_least_used", "evict_random"})
    if (c.eviction_policy == p) return status::ok();
  return make_error(
      errc::invalid_argument,
      "{}.eviction_policy = '{}': expected evict_oldest, evict_least_used or evict_random", where,
      c.eviction_policy);
}

expected<hps_table_config> read_table(const toml::table& t, hps_table_config c,
                                      std::string_view where, bool allow_section_keys) {
  for (auto&& [k, _] : t) {
    const std::string_view key = k.str();
    if (allow_section_keys && (key == "tables" || key == "refresh_interval_ms" || key == "l1_gpus"))
      continue;
    if (std::find(kTableKeys.begin(), kTableKeys.end(), key) == kTableKeys.end())
      return make_error(errc::invalid_argument, "unknown field {}.{}", where, key);
  }
  double dv = c.default_value;
  SPINDLE_TRY(read_number(t, "cache_fraction", c.cache_fraction, where));
  SPINDLE_TRY(read_number(t, "hit_rate_threshold", c.hit_rate_threshold, where));
  SPINDLE_TRY(read_number(t, "default_value", dv, where));
  SPINDLE_TRY(read_number(t, "overflow_resolution", c.overflow_resolution, where));
  SPINDLE_TRY(read_count(t, "slabs_per_set", c.slabs_per_set, where));
  SPINDLE_TRY(read_count(t, "vdb_partitions", c.vdb_partitions, where));
  SPINDLE_TRY(read_count(t, "overflow_margin", c.overflow_margin, where));
  if (const toml::node* n = t.get("eviction_policy")) {
    auto v = n->value<std::string>();
    if (!v) return make_error(errc::invalid_argument, "{}.eviction_policy must be a string", where);
    c.eviction_policy = *v;
  }
  c.default_value = float(dv);
  SPINDLE_TRY(validate_table(c, where));
  return c;
}

expected<hps_config> from_root(const toml::table& root, const hps_config& base) {
  hps_config out = base;
  const toml::table* hps = root["hps"].as_table();
  if (hps == nullptr) return out;
  SPINDLE_ASSIGN_OR_RETURN(out.defaults, read_table(*hps, base.defaults, "hps", true));
  if (const toml::node* n = hps->get("refresh_interval_ms")) {
    auto v = n->value<std::int64_t>();
    if (!v || *v < 0)
      return make_error(errc::invalid_argument, "hps.refresh_interval_ms must be an integer >= 0");
    out.refresh_interval_ms = std::uint32_t(*v);
  }
  if (const toml::node* n = hps->get("l1_gpus")) {
    auto v = n->value<std::int64_t>();
    if (!v || *v < 1 || *v > 64)
      return make_error(errc::invalid_argument, "hps.l1_gpus must be an integer in 1..64");
    out.l1_gpus = int(*v);
  }
  if (const toml::node* n = hps->get("tables")) {
    const toml::table* tables = n->as_table();
    if (tables == nullptr)
      return make_error(errc::invalid_argument, "hps.tables must be a table of tables");
    for (auto&& [name, node] : *tables) {
      const toml::table* t = node.as_table();
      const std::string where = fmt::format("hps.tables.{}", name.str());
      if (t == nullptr) return make_error(errc::invalid_argument, "{} must be a table", where);
      SPINDLE_ASSIGN_OR_RETURN(out.tables[std::string(name.str())],
                               read_table(*t, out.defaults, where, false));
    }
  }
  return out;
}

}  // namespace

const hps_table_config& hps_config::for_table(const std::string& table) const {
  const auto it = tables.find(table);
  return it == tables.end() ? defaults : it->second;
}

expected<hps_config> parse_hps_config(std::string_view toml_text, std::string_view origin,
                                      const hps_config& base) {
  try {
    auto r = from_root(toml::parse(toml_text, origin), base);
    if (!r) return std::move(r).error().with_context(fmt::format("{}: ", origin));
    return r;
  } catch (const toml::parse_error& e) {
    return make_error(errc::invalid_argument, "{}: line {}: {}", origin, e.source().begin.line,
                      e.description());
  }
}

expected<hps_config> load_hps_config(const std::string& path, const hps_config& base) {
  SPINDLE_ASSIGN_OR_RETURN(auto text, read_text_file(path, "parameter-server settings"));
  return parse_hps_config(text, path, base);
}

}  // namespace spindle::config
