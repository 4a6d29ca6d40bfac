// A Hera profile table (Hera §V-B, §VI-B, Figs. 5-7): for each recommendation
// model served alone on one machine, the max QPS that meets its SLA for 1..W
// workers and each LLC way count, and the memory bandwidth it draws. Written
// by `spindle profile`, read by the affinity table, the cluster planner and
// the node resource manager. Stored as JSON; errors name the file and field.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/status.hpp"

namespace spindle::colocation::hera {

struct model_profile {
  double sla_ms = 0;         // the model's SLA
  double percentile = 0.99;  // the tail the SLA is on (0.95 or 0.99)
  /// qps[w - 1][k - 1]: max QPS meeting the SLA with w workers and k LLC ways.
  std::vector<std::vector<double>> qps;
  /// mem_bw_gbps[w - 1]: DRAM bandwidth drawn at that QPS with all ways.
  std::vector<double> mem_bw_gbps;
  std::string mem_bw_source;  // "perf_event" (hardware counters) or "bytes x qps"

  int max_workers() const { return int(qps.size()); }
  int ways() const { return qps.empty() ? 0 : int(qps.front().size()); }
  /// QPS at `workers` (clamped to 1..max) and `ways` (clamped to 1..ways()).
  double at(int workers, int ways) const;
};

struct machine_profile {
  int cores = 0;
  int llc_ways = 1;        // 1 when the kernel exposes no resctrl
  double mem_bw_gbps = 0;  // the socket's sustainable bandwidth (measured)
};

struct profile_table {
  machine_profile machine;
  std::map<std::string, model_profile> models;
};

/// Checks shapes and values (each model's table is workers x machine.llc_ways,
/// non-negative and finite); errors name `origin` and the field.
status validate(const profile_table& t, const std::string& origin);
expected<profile_table> parse_profile_table(const std::string& json_text,
                                            const std::string& origin);
expected<profile_table> load_profile_table(const std::string& path);
std::string to_json(const profile_table& t);

}  // namespace spindle::colocation::hera
