#include "apps/commands/members_table.hpp"

#include <fmt/format.h>

#include <vector>

#include "config/cluster_ranks.hpp"

namespace spindle::apps {
namespace {

std::string field(const nlohmann::json& m, const char* key) {
  if (!m.contains(key) || m[key].is_null()) return "-";
  const auto& v = m[key];
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (v.is_string()) return v.get<std::string>().empty() ? "-" : v.get<std::string>();
  return v.dump();
}

// A published region or bridge is shown by its presence, not its bytes; a dead
// member's ("-") is out of reach, whatever it last published.
std::string present(const nlohmann::json& m, const char* key) {
  if (!m.value("alive", false)) return "-";
  return m.contains(key) && m[key].is_string() && !m[key].get<std::string>().empty() ? "yes"
                                                                                      : "no";
}

// A rank that joined past the TOML's: its HOST:PORT, and whether it leaves.
std::string joined_at(const nlohmann::json& m) {
  std::string at = field(m, "address");
  if (m.value("leaving", false)) at += m.value("alive", false) ? " (leaving)" : " (left)";
  return at;
}

}  // namespace

std::string members_table(const nlohmann::json& members) {
  const auto& list = members.is_object() && members.contains("members") ? members["members"] : members;
  const std::vector<std::string> head = {"RANK", "NAME",  "PID",     "ALIVE", "JOINS",
                                         "READY", "SHARD", "BRIDGE", "EPOCH", "READING",
                                         "JOINED AT"};
  std::vector<std::vector<std::string>> rows = {head};
  for (const auto& m : list)
    rows.push_back({field(m, "rank"), field(m, "name"), field(m, "pid"), field(m, "alive"),
                    field(m, "joins"), field(m, "ready"), present(m, "descriptor"),
                    present(m, "bridge"), field(m, "epoch"), field(m, "reading"),
                    joined_at(m)});
  std::vector<std::size_t> width(head.size(), 0);
  for (const auto& r : rows)
    for (std::size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  std::string out;
  for (const auto& r : rows) {
    for (std::size_t i = 0; i < r.size(); ++i)
      out += fmt::format("{:<{}}{}", r[i], width[i], i + 1 < r.size() ? "  " : "\n");
  }
  for (const auto& m : list)
    if (m.contains("target")) {
      const config::plan_ranks target{m.value("servers", 0), m.value("absent", std::uint64_t{0})};
      out += fmt::format("placement: target epoch {} over {}\n", field(m, "target"),
                         config::to_string(target));
    }
  return out;
}

}  // namespace spindle::apps
