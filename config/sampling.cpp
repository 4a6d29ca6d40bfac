#include "config/sampling.hpp"

#include <charconv>

#include "core/enum_names.hpp"

namespace spindle::config {

expected<std::vector<int>> parse_fanouts(std::string_view text) {
  std::vector<int> out;
  if (text.empty()) return make_error(errc::invalid_argument, "fanouts: empty list");
  while (true) {
    auto comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    int value = 0;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (ec != std::errc() || ptr != item.data() + item.size() || item.empty())
      return make_error(errc::invalid_argument, "fanouts: '{}' is not an integer", item);
    if (value == 0 || value < kAllNeighbours)
      return make_error(errc::invalid_argument, "fanouts: {} must be positive or -1 (all)", value);
    out.push_back(value);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  if (out.size() > 8)
    return make_error(errc::invalid_argument, "fanouts: {} hops given, at most 8 supported", out.size());
  return out;
}

std::string format_fanouts(const std::vector<int>& fanouts) {
  std::string s;
  for (std::size_t i = 0; i < fanouts.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(fanouts[i]);
  }
  return s;
}

constexpr enum_names<seed_distribution_kind, 3> kSeedKinds{{{
    {seed_distribution_kind::uniform, "uniform"}, {seed_distribution_kind::degree, "degree"},
    {seed_distribution_kind::file, "file"}}}};

std::string_view to_string(seed_distribution_kind k) { return kSeedKinds.name(k, "unknown"); }

std::string seed_distribution::to_string() const {
  return kind == seed_distribution_kind::file ? path : std::string(config::to_string(kind));
}

seed_distribution parse_seed_distribution(std::string_view text) {
  if (text == "uniform") return {seed_distribution_kind::uniform, {}};
  if (text == "degree") return {seed_distribution_kind::degree, {}};
  return {seed_distribution_kind::file, std::string(text)};
}

}  // namespace spindle::config
