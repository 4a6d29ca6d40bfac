// Cluster membership over CAF's middleman (the control plane, docs/architecture.md
// "Planes"): every node publishes a node actor on its configured loopback
// port; rank 0 (the coordinator) accepts joins from the others, monitors them
// (down messages mark a member dead; a restarted node joins again) and answers
// status queries. Messages are atoms, integers and strings only, so nothing
// needs type announcements across processes.
#pragma once

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <functional>
#include <string>

#include "actors/atoms.hpp"
#include "core/status.hpp"

namespace spindle::actors {

/// Spawns the coordinator (rank 0), which publishes its own shard `descriptor`
/// and UCX `bridge` address (either may be empty):
/// The cluster `token` authenticates joins and outside status queries. `plan` is the
/// checksum of the placement plan its rows are laid out by (empty: no shard); a
/// member whose plan differs is refused, naming both (its folder comes from
/// another `spindle partition` run).
///   (join_atom, rank, name, pid, descriptor, plan, token) -> (ok_atom, coordinator's bridge
///                    address)
///   (join_atom, rank, name, pid, descriptor, plan, token, address) -> the same, for a rank
///                    past the TOML's joining a running cluster (`node --join`) at HOST:PORT
///                    `address`: refused by name unless `rank` is the next one (every rank
///                    before it alive) and no live member holds it. Listed with "address"
///                    and "joined"; the placement re-plans with it (see plan_atom).
///   (leave_atom, rank, token) -> ok_atom  asks the rank to leave gracefully: listed as
///                    "leaving", the placement re-plans without it, and the rank exits once
///                    every other member reads that plan. Only a joined rank may leave; one
///                    below a live joined rank stays in the plan as absent (no rows).
///   (ready_atom, rank, bridge address[, pipelines])  the member serves batches with
///                    that many pipelines (or "" if it only holds rows; no count: as many
///                    as rank 0), listed as "pipelines" (0: unsaid)
///   (status_atom) -> JSON array: rank, name, pid, alive, joins, descriptor, bridge, ready,
///                    and the placement fields below; only for senders in this process
///   (status_atom, token) -> the same, for anyone holding the cluster token
/// Placement epochs (a re-plan migrates rows under a new epoch; 0 = the plan at start):
///   (plan_atom, epoch, fap descriptor, ranks, absent) -> ok_atom  rank 0's placement set
///                    a new target plan over `ranks` servers (ranks 0..ranks-1, those in the
///                    `absent` mask planned with no rows: config::plan_ranks), made from the
///                    observed FAP readable at the descriptor; listed on rank 0 as "target",
///                    "fap", "servers" and "absent" (as a list too, "absent_ranks"), and
///                    the target before it as "from_epoch", "from_fap", "from_servers" and
///                    "from_absent" (a joining rank rebuilds that plan to read its rows
///                    from their current owners); the ranks the next plan should have as
///                    "ranks" and "absent_next" ("absent_next_ranks": a joined rank that
///                    died or leaves below a live one). Epochs only grow.
///   (shard_atom, rank, epoch, descriptor)  the rank built its shard for that epoch; its
///                    previous one stays listed as old_descriptor/old_epoch until retired
///   (retire_atom, rank, epoch)  the rank freed its shard of that epoch
///   (reading_atom, rank, epoch, problem)  the rank's pipeline reads the plan of that epoch
///                    now; `problem` (empty: none) says why it cannot build or read the
///                    target epoch, listed as "placement_error"
///   (rows_atom, from, owner, ids) -> (descriptor, held)  rank `from`, building its shard,
///                    asks rank `owner` (rank 0 itself, or the member it asks in turn) to lend
///                    the rows of `ids` its own copy of the dataset holds (see lend_fn)
/// GNN models loaded at run time (every node with a door serves them):
///   (models_atom, token) -> JSON object {name: model directory}
///   (models_atom, "add" | "remove", name, directory, token) -> ok_atom
/// Lends rows of this node's own copy of the dataset to rank `to`: `ids` holds
/// node ids (int64, host order: every rank runs the same build); the answer is the
/// descriptor of a UCX region holding the rows it has back to back, and one byte
/// per id (1: lent). Empty `ids` frees what was lent to `to`. Runs on a CAF thread.
using lend_fn =
    std::function<expected<std::pair<std::string, std::string>>(int to, const std::string& ids)>;

/// `ranks`: the TOML's rank count, the servers of the plan at start (0: joins refused).
caf::actor spawn_coordinator(caf::actor_system& sys, std::string name, std::string descriptor,
                             std::string bridge, std::string token, std::string plan = {},
                             lend_fn lend = {}, int ranks = 0);

struct member_options {
  int rank = 1;
  std::string name;
  std::string descriptor;       // its feature shard's UCX region, or empty
  caf::actor bridge;            // its UCX bridge, told the coordinator's address on join
  bool serves_batches = false;  // if set, ready is sent later with (ready_atom, address, pipelines)
  std::string token;            // the cluster token
  std::string plan;             // its placement plan's checksum (empty: no shard)
  /// Called (on a CAF thread) when the coordinator is seen down.
  std::function<void()> on_coordinator_down;
  /// Called (on a CAF thread) when the coordinator refused the join, with the reason.
  std::function<void(const std::string&)> on_join_failed;
  lend_fn lend;  // answers the coordinator's (rows_atom) asks; empty: it holds no dataset
  std::string address;  // a rank joining a running cluster: its HOST:PORT (empty: a TOML rank)
};

/// Spawns a member node actor that joins `coordinator`. It answers (status_atom)
/// with its own JSON line; (ready_atom, bridge address, pipelines) passes readiness on.
caf::actor spawn_member(caf::actor_system& sys, caf::actor coordinator, member_options options);

}  // namespace spindle::actors
