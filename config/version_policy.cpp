// Triton's version policies over a model repository entry's versions
// (config/model.hpp pick_versions): which to serve, highest first.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "config/model.hpp"

namespace spindle::config {

namespace {

expected<std::vector<int>> positive_list(const std::string& policy, std::string_view text) {
  std::vector<int> out;
  while (!text.empty()) {
    const auto comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    int v = 0;
    auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || p != item.data() + item.size() || v <= 0)
      return make_error(errc::invalid_argument, "version_policy '{}': '{}' is not a number >= 1",
                        policy, item);
    out.push_back(v);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
  }
  if (out.empty())
    return make_error(errc::invalid_argument, "version_policy '{}': no number", policy);
  return out;
}

}  // namespace

expected<std::vector<int>> pick_versions(const std::string& policy,
                                         const std::vector<int>& versions) {
  std::vector<int> have = versions;
  std::sort(have.rbegin(), have.rend());
  std::vector<int> out;
  if (policy.empty() || policy == "latest" || policy == "all") {
    out = policy == "all" ? have
                          : std::vector<int>(have.begin(), have.begin() + (have.empty() ? 0 : 1));
  } else if (policy.starts_with("latest:")) {
    SPINDLE_ASSIGN_OR_RETURN(auto n, positive_list(policy, std::string_view(policy).substr(7)));
    if (n.size() != 1)
      return make_error(errc::invalid_argument, "version_policy '{}': latest:N takes one N",
                        policy);
    out.assign(have.begin(), have.begin() + std::min<std::size_t>(have.size(), std::size_t(n[0])));
  } else if (policy.starts_with("specific:")) {
    SPINDLE_ASSIGN_OR_RETURN(out, positive_list(policy, std::string_view(policy).substr(9)));
    std::sort(out.rbegin(), out.rend());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    for (int v : out)
      if (std::find(have.begin(), have.end(), v) == have.end())
        return make_error(errc::not_found, "version_policy '{}': no version {} (have: {})", policy,
                          v, fmt::join(have, ", "));
  } else {
    return make_error(errc::invalid_argument,
                      "version_policy '{}': expected latest, latest:N, specific:V[,V...] or all",
                      policy);
  }
  if (out.empty()) return make_error(errc::not_found, "no versions");
  return out;
}

}  // namespace spindle::config
