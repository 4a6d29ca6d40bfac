// The ranks of a running cluster, which may outgrow its TOML: a rank that joins
// (`spindle node --join`), leaves or dies changes the servers the next placement
// plan has. Every node builds the same topology for the same ranks from its TOML.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/topology.hpp"

namespace spindle::config {

/// A plan's ranks: servers 0..count-1, of which the `absent` ones (bit r: rank
/// r) hold no rows: a joined rank that died or leaves below a live joined one
/// keeps its number (it names the others' shards, regions and bridges) and is
/// planned with no memory. Only ranks below 64 can be absent.
struct plan_ranks {
  int count = 0;  // 0: the TOML's
  std::uint64_t absent = 0;

  static constexpr int kMaxAbsent = 64;
  bool is_absent(int rank) const {
    return rank >= 0 && rank < kMaxAbsent && ((absent >> rank) & 1u) != 0;
  }
  /// Whether `rank` holds rows of the plan (below its count and not absent).
  bool holds(int rank) const { return rank < count && !is_absent(rank); }
  /// The absent ranks in order.
  std::vector<int> absent_ranks() const {
    std::vector<int> out;
    for (int r = 0; r < kMaxAbsent; ++r)
      if (is_absent(r)) out.push_back(r);
    return out;
  }
  bool operator==(const plan_ranks&) const = default;
};

/// "5 ranks" or "5 ranks, 3 absent" (logs and errors).
std::string to_string(const plan_ranks& r);

/// `toml` with exactly `ranks.count` servers: the TOML's first ones, then, for
/// each rank past the TOML's, a copy of its last server (memory, disk, devices:
/// what placement reads) named "rank-R" on `host`, port 0 (a joined rank's real
/// address lives in the coordinator's member list, not in the plan). An absent
/// rank keeps its place with no memory, disk or devices, so placement puts no
/// row on it. A count <= 0 or equal to the TOML's with none absent returns
/// `toml` unchanged. A function of its inputs only: every node computes the
/// same plan from it.
topology with_ranks(const topology& toml, plan_ranks ranks, const std::string& host = "127.0.0.1");
inline topology with_ranks(const topology& toml, int ranks, const std::string& host = "127.0.0.1") {
  return with_ranks(toml, plan_ranks{ranks, 0}, host);
}

}  // namespace spindle::config
