// The coordinator's state (rank 0's member list, the placement target and the
// plan before it) and the rules it answers by: the ranks the next plan should
// have, which joins and leaves it refuses, when a target is applied or can never
// be, and the member list it reports. Only the coordinator actor (node_actor.cpp)
// holds the state; these functions read or update it and send nothing.
#pragma once

#include <caf/all.hpp>
#include <map>
#include <string>

#include "actors/node_actor.hpp"
#include "config/cluster_ranks.hpp"

namespace spindle::actors::coordinator_rules {

struct member {
  std::string name;
  int pid = 0;
  bool alive = false;
  int joins = 0;
  caf::actor_addr addr;
  std::string descriptor;      // the node's feature-shard region (UCX), empty if none
  std::string bridge;          // its UCX bridge address once its pipeline serves, else empty
  bool ready = false;          // joined and, if it serves batches, registered its pipeline
  int epoch = 0;               // the placement epoch `descriptor` is laid out for
  std::string old_descriptor;  // its previous epoch's shard, until retired
  int old_epoch = -1;
  int reading = 0;       // the epoch its pipeline reads
  std::string problem;   // why it cannot build or read the target epoch (empty: none)
  caf::node_id node;     // the process that joined as this rank, with the cluster token
  std::string address;   // a rank that joined past the TOML's: its HOST:PORT (`node --join`)
  bool leaving = false;  // asked to leave (kept after it exits: the plan goes on without it)
  int pipelines = 0;     // the pipelines it serves batches with, as its ready said (0: unsaid)
};

struct target_plan {
  int epoch = 0;
  std::string fap;           // descriptor of the observed FAP the plan is made from
  int servers = 0;           // the plan's ranks (0..servers-1)
  std::uint64_t absent = 0;  // of them, those planned with no rows (config::plan_ranks)
  config::plan_ranks ranks() const { return {servers, absent}; }
};

struct coordinator_state {
  std::string name;
  std::string token;  // the cluster token: joins and outside status queries carry it
  std::string plan;   // the checksum of rank 0's placement plan (empty: no shard)
  std::map<int, member> members;
  target_plan target;
  target_plan from;  // the target before it: the plan a rank that joins reads its rows by
  std::map<std::string, std::string> models;  // GNNs loaded at run time: name -> directory
  lend_fn lend;   // rank 0's own copy of the dataset lends rows (empty: it holds none)
  int ranks = 0;  // the TOML's ranks (0: joins refused)
};

// The ranks the next plan should have: the TOML's, then those that joined past
// them up to the highest live one not leaving; of those, a joined rank that
// died or leaves is absent (no rows; its number stays, as it names the others'
// shards and regions). A TOML rank that dies is expected back: never absent.
config::plan_ranks wanted_ranks(const coordinator_state& st);

// The placement-epoch messages of the coordinator (see node_actor.hpp).
void on_shard(coordinator_state& st, int rank, int epoch, const std::string& descriptor);
void on_retire(coordinator_state& st, int rank, int epoch);
/// The first live shard holder not yet reading the target with its old shard
/// freed (-1: the target is applied).
int rank_applying(const coordinator_state& st);
/// Why the target plan can never be applied ("" if it can).
std::string unfinishable_target(const coordinator_state& st);
/// The member list as JSON (status_atom's answer).
std::string status_json(const coordinator_state& st);
/// Why a rank joining past the TOML's (`node --join`) is refused ("" if it is not).
std::string joiner_refusal(const coordinator_state& st, int rank);
/// Why rank `rank` may not leave ("" if it may).
std::string leave_refusal(const coordinator_state& st, int rank);

}  // namespace spindle::actors::coordinator_rules
