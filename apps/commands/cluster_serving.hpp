// The data-plane side of `spindle node --dataset`: a member holds its server's
// feature shard of the FAP plan in UCX memory and publishes the descriptor when
// it joins; the coordinator, once every member has joined, gathers features
// through the lookup table (its own shard by pointer, the others one-sidedly)
// and answers a workload, printing a checksum of all answers so runs can be
// compared with a single process.
#pragma once

#include <caf/all.hpp>
#include <memory>
#include <string>

#include "config/topology.hpp"
#include "core/status.hpp"

namespace spindle::apps {

/// Keeps a member's shard memory and progress loop alive; `descriptor` is published.
struct shard_service {
  virtual ~shard_service() = default;
  std::string descriptor;
};

/// Allocates and fills rank `rank`'s host-memory shard of the plan for `dataset`.
expected<std::unique_ptr<shard_service>> start_shard(const config::topology& topo,
                                                     const std::string& dataset, int rank);

/// On the coordinator: waits until `expect` members published shards, then serves
/// `workload` requests with `model_dir` and prints "answers N failed F checksum HEX ..."
/// (preceded by "failed_ids ..." when some requests lost every owner of a row).
status serve_from_cluster(caf::actor_system& sys, caf::actor coordinator,
                          const config::topology& topo, const std::string& dataset,
                          const std::string& model_dir, std::size_t workload, int expect);

}  // namespace spindle::apps
