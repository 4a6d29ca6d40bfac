#include "colocation/hera/profile.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/text_file.hpp"

namespace spindle::colocation::hera {

double model_profile::at(int workers, int ways_) const {
  if (qps.empty()) return 0;
  const int w = std::clamp(workers, 1, max_workers());
  const int k = std::clamp(ways_, 1, ways());
  return qps[std::size_t(w - 1)][std::size_t(k - 1)];
}

status validate(const profile_table& t, const std::string& origin) {
  if (t.machine.cores < 1)
    return make_error(errc::invalid_argument, "{}: machine.cores = {}: must be >= 1", origin,
                      t.machine.cores);
  if (t.machine.llc_ways < 1)
    return make_error(errc::invalid_argument, "{}: machine.llc_ways = {}: must be >= 1", origin,
                      t.machine.llc_ways);
  if (!(t.machine.mem_bw_gbps > 0) || !std::isfinite(t.machine.mem_bw_gbps))
    return make_error(errc::invalid_argument, "{}: machine.mem_bw_gbps = {}: must be > 0", origin,
                      t.machine.mem_bw_gbps);
  for (const auto& [name, m] : t.models) {
    if (m.qps.empty())
      return make_error(errc::invalid_argument, "{}: models.{}.qps is empty", origin, name);
    if (!(m.sla_ms > 0))
      return make_error(errc::invalid_argument, "{}: models.{}.sla_ms = {}: must be > 0", origin,
                        name, m.sla_ms);
    for (std::size_t w = 0; w < m.qps.size(); ++w) {
      if (int(m.qps[w].size()) != t.machine.llc_ways)
        return make_error(errc::invalid_argument,
                          "{}: models.{}.qps[{}] has {} way columns, machine.llc_ways is {}",
                          origin, name, w, m.qps[w].size(), t.machine.llc_ways);
      for (double q : m.qps[w])
        if (!(q >= 0) || !std::isfinite(q))
          return make_error(errc::invalid_argument, "{}: models.{}.qps[{}] holds {}", origin, name,
                            w, q);
    }
    if (m.mem_bw_gbps.size() != m.qps.size())
      return make_error(errc::invalid_argument,
                        "{}: models.{}.mem_bw_gbps has {} entries for {} worker rows", origin, name,
                        m.mem_bw_gbps.size(), m.qps.size());
  }
  return status::ok();
}

expected<profile_table> parse_profile_table(const std::string& text, const std::string& origin) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return make_error(errc::invalid_argument, "{}: not a JSON object", origin);
  profile_table t;
  try {
    const auto& m = j.at("machine");
    t.machine.cores = m.at("cores").get<int>();
    t.machine.llc_ways = m.value("llc_ways", 1);
    t.machine.mem_bw_gbps = m.at("mem_bw_gbps").get<double>();
    for (const auto& [name, x] : j.at("models").items()) {
      model_profile p;
      p.sla_ms = x.at("sla_ms").get<double>();
      p.percentile = x.value("percentile", 0.99);
      p.qps = x.at("qps").get<std::vector<std::vector<double>>>();
      p.mem_bw_gbps = x.at("mem_bw_gbps").get<std::vector<double>>();
      p.mem_bw_source = x.value("mem_bw_source", std::string());
      t.models[name] = std::move(p);
    }
  } catch (const nlohmann::json::exception& e) {
    return make_error(errc::invalid_argument,
                      "{}: expected {{\"machine\": {{cores, llc_ways, mem_bw_gbps}}, \"models\": "
                      "{{NAME: {{sla_ms, qps: [[per way] per worker], mem_bw_gbps: [per "
                      "worker]}}}}}} ({})",
                      origin, e.what());
  }
  SPINDLE_TRY(validate(t, origin));
  return t;
}

expected<profile_table> load_profile_table(const std::string& path) {
  SPINDLE_ASSIGN_OR_RETURN(auto text, read_text_file(path, "profile"));
  return parse_profile_table(text, path);
}

std::string to_json(const profile_table& t) {
  nlohmann::json j;
  j["machine"] = {{"cores", t.machine.cores},
                  {"llc_ways", t.machine.llc_ways},
                  {"mem_bw_gbps", t.machine.mem_bw_gbps}};
  j["models"] = nlohmann::json::object();
  for (const auto& [name, m] : t.models)
    j["models"][name] = {{"sla_ms", m.sla_ms},
                         {"percentile", m.percentile},
                         {"qps", m.qps},
                         {"mem_bw_gbps", m.mem_bw_gbps},
                         {"mem_bw_source", m.mem_bw_source}};
  return j.dump(2);
}

}  // namespace spindle::colocation::hera
