// The ranks of a running cluster, which may outgrow its TOML: a rank that joins
// (`spindle node --join`) or leaves changes how many servers the next placement
// plan has. Every node builds the same topology for a rank count from its TOML.
#pragma once

#include <string>

#include "config/topology.hpp"

namespace spindle::config {

/// `toml` with exactly `ranks` servers: the TOML's first `ranks` servers, then,
/// for each rank past the TOML's, a copy of its last server (memory, disk,
/// devices: what placement reads) named "rank-R" on `host`, port 0 (a joined
/// rank's real address lives in the coordinator's member list, not in the
/// plan). `ranks` <= 0 or equal to the TOML's count returns `toml` unchanged.
/// A function of its inputs only: every node computes the same plan from it.
topology with_ranks(const topology& toml, int ranks, const std::string& host = "127.0.0.1");

}  // namespace spindle::config
