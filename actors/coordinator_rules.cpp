#include "actors/coordinator_state.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace spindle::actors::coordinator_rules {
namespace {

// A plan's absent ranks as a list (beside the mask: JSON readers that hold
// numbers as doubles lose a mask's bits past 53).
nlohmann::json absent_list(std::uint64_t mask) {
  return config::plan_ranks{0, mask}.absent_ranks();
}

nlohmann::json member_json(int rank, const member& m, const target_plan& t,
                           const target_plan& from) {
  nlohmann::json j = {{"rank", rank},
                      {"name", m.name},
                      {"pid", m.pid},
                      {"alive", m.alive},
                      {"joins", m.joins},
                      {"descriptor", m.descriptor},
                      {"bridge", m.bridge},
                      {"ready", m.ready},
                      {"epoch", m.epoch},
                      {"old_descriptor", m.old_descriptor},
                      {"old_epoch", m.old_epoch},
                      {"reading", m.reading},
                      {"placement_error", m.problem},
                      {"address", m.address},
                      {"joined", !m.address.empty()},
                      {"leaving", m.leaving},
                      {"pipelines", m.pipelines}};
  if (rank == 0) {
    j["target"] = t.epoch;
    j["fap"] = t.fap;
    j["servers"] = t.servers;
    j["absent"] = t.absent;
    j["absent_ranks"] = absent_list(t.absent);
    j["from_epoch"] = from.epoch;
    j["from_fap"] = from.fap;
    j["from_servers"] = from.servers;
    j["from_absent"] = from.absent;
  }
  return j;
}

}  // namespace

// The ranks the next plan should have: the TOML's, then those that joined past
// them up to the highest live one not leaving; of those, a joined rank that
// died or leaves is absent (no rows; its number stays, as it names the others'
// shards and regions). A TOML rank that dies is expected back: never absent.
config::plan_ranks wanted_ranks(const coordinator_state& st) {
  config::plan_ranks p{st.ranks, 0};
  for (const auto& [rank, m] : st.members)
    if (m.alive && !m.address.empty() && !m.leaving) p.count = std::max(p.count, rank + 1);
  for (int r = st.ranks; r < p.count && r < config::plan_ranks::kMaxAbsent; ++r) {
    const auto it = st.members.find(r);
    if (it == st.members.end() || !it->second.alive || it->second.leaving)
      p.absent |= std::uint64_t{1} << r;
  }
  return p;
}

// The placement-epoch messages of the coordinator (see node_actor.hpp).
void on_shard(coordinator_state& st, int rank, int epoch, const std::string& descriptor) {
  auto it = st.members.find(rank);
  if (it == st.members.end()) return;
  auto& m = it->second;
  if (epoch > m.epoch) {
    m.old_descriptor = std::move(m.descriptor);
    m.old_epoch = m.epoch;
    m.epoch = epoch;
  }
  if (epoch == m.epoch) m.descriptor = descriptor;
}

void on_retire(coordinator_state& st, int rank, int epoch) {
  auto it = st.members.find(rank);
  if (it == st.members.end() || it->second.old_epoch != epoch) return;
  it->second.old_descriptor.clear();
  it->second.old_epoch = -1;
}

// The first live shard holder not yet reading the target with its old shard
// freed (-1: the target is applied).
int rank_applying(const coordinator_state& st) {
  for (const auto& [rank, m] : st.members)
    if (m.alive && !m.descriptor.empty() &&
        (m.epoch != st.target.epoch || m.reading != m.epoch || m.old_epoch >= 0))
      return rank;
  return -1;
}

// Why the target plan can never be applied ("" if it can): a rank that joined,
// holds rows of it and died before every live member read it. Readers attach
// the target only once every owner of it publishes, so they stay where they
// are until a rank joins as that rank again and builds its shard.
std::string unfinishable_target(const coordinator_state& st) {
  for (const auto& [rank, m] : st.members)
    if (!m.alive && !m.address.empty() && st.target.ranks().holds(rank) && st.target.epoch > 0)
      return fmt::format(
          "plan: epoch {} cannot be applied: rank {} (joined from {}), which holds rows of it, "
          "died before every member read it, so the members read epoch {} on; a rank joining "
          "as rank {} (`node --join` picks it) builds its shard and completes it",
          st.target.epoch, rank, m.address, st.from.epoch, rank);
  return {};
}

std::string status_json(const coordinator_state& st) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& [rank, m] : st.members) {
    j.push_back(member_json(rank, m, st.target, st.from));
    if (rank != 0) continue;
    const auto next = wanted_ranks(st);
    j.back()["ranks"] = next.count;
    j.back()["absent_next"] = next.absent;
    j.back()["absent_next_ranks"] = absent_list(next.absent);
  }
  return j.dump();
}

// Why a rank joining past the TOML's (`node --join`) is refused ("" if it is not).
std::string joiner_refusal(const coordinator_state& st, int rank) {
  const auto it = st.members.find(rank);
  if (it != st.members.end() && it->second.alive)
    return fmt::format(
        "join: rank {} is already a live member ({}, pid {}): give --join another "
        "rank, or none for the next one",
        rank, it->second.name.substr(0, 64), it->second.pid);
  if (st.ranks <= 0) return "join: this coordinator takes no ranks beyond its TOML's";
  for (const auto& [r, m] : st.members)  // one move at a time
    if (m.alive && m.leaving)
      return fmt::format("join: rank {} is leaving the cluster; join once it has left", r);
  if (rank < st.ranks)
    return fmt::format("join: rank {} is one of the TOML's {} ranks: start it without --join", rank,
                       st.ranks);
  for (int r = st.ranks; r < rank; ++r) {
    const auto m = st.members.find(r);
    if (m == st.members.end() || !m->second.alive || m->second.leaving)
      return fmt::format(
          "join: rank {} would leave rank {} empty: the next rank is {} (`--join` "
          "without --rank takes it)",
          rank, r, r);
  }
  return {};
}

// Why rank `rank` may not leave ("" if it may).
std::string leave_refusal(const coordinator_state& st, int rank) {
  const auto it = st.members.find(rank);
  if (rank == 0)
    return "leave: rank 0 coordinates the cluster and cannot leave it (stop the cluster "
           "instead)";
  if (rank > 0 && it != st.members.end() && !it->second.alive && it->second.leaving)
    return fmt::format("leave: rank {} has already left", rank);
  if (rank < 0 || it == st.members.end() || !it->second.alive)
    return fmt::format("leave: rank {} is not a live member", rank);
  if (it->second.leaving) return fmt::format("leave: rank {} is already leaving", rank);
  if (rank >= config::plan_ranks::kMaxAbsent && rank + 1 != wanted_ranks(st).count)
    return fmt::format(
        "leave: rank {} is below a live rank and past the {} ranks a plan can "
        "leave absent; the highest rank leaves first",
        rank, config::plan_ranks::kMaxAbsent);
  if (it->second.address.empty())  // the TOML's ranks hold the table the cluster was sized for
    return fmt::format(
        "leave: rank {} is one of the TOML's {} ranks, which the cluster's "
        "placement is sized for and expects back; only ranks that joined "
        "(node --join) leave",
        rank, st.ranks);
  return {};
}

}  // namespace spindle::actors::coordinator_rules
