#include "actors/node_actor.hpp"

#include <unistd.h>

#include <map>
#include <nlohmann/json.hpp>

#include "actors/bridge_messages.hpp"
#include "core/log.hpp"
#include "transport/rpc/rpc_types.hpp"

namespace spindle::actors {
namespace {

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
  int reading = 0;  // the epoch its pipeline reads
  std::string problem;  // why it cannot build or read the target epoch (empty: none)
  caf::node_id node;  // the process that joined as this rank, with the cluster token
};

struct target_plan {
  int epoch = 0;
  std::string fap;  // descriptor of the observed FAP the plan is made from
};

struct coordinator_state {
  std::string name;
  std::string token;  // the cluster token: joins and outside status queries carry it
  std::string plan;   // the checksum of rank 0's placement plan (empty: no shard)
  std::map<int, member> members;
  target_plan target;
  std::map<std::string, std::string> models;  // GNNs loaded at run time: name -> directory
  lend_fn lend;  // rank 0's own copy of the dataset lends rows (empty: it holds none)
};

nlohmann::json member_json(int rank, const member& m, const target_plan& t) {
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
                      {"placement_error", m.problem}};
  if (rank == 0) {
    j["target"] = t.epoch;
    j["fap"] = t.fap;
  }
  return j;
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

// A status query from this process needs no token; any other must carry it.
bool trusted_sender(caf::stateful_actor<coordinator_state>* self) {
  const auto& sender = self->current_sender();
  return sender && sender->node() == self->node();
}

// A rank's control message (ready, shard, retire, reading) counts only from the
// process that joined as that rank with the cluster token, or from this one; a
// stranger's is dropped and logged (one line per 100).
bool from_member(caf::stateful_actor<coordinator_state>* self, int rank, const char* what) {
  const auto& sender = self->current_sender();
  if (sender && sender->node() == self->node()) return true;
  const auto it = self->state.members.find(rank);
  if (sender && it != self->state.members.end() && it->second.alive &&
      it->second.node == sender->node())
    return true;
  static std::uint64_t dropped = 0;
  if (dropped++ % 100 == 0)
    log::warn("ignored a '{}' message for rank {} from a process that did not join as it ({} so "
              "far)",
              what, rank, dropped);
  return false;
}

std::string status_json(const coordinator_state& st) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& [rank, m] : st.members) j.push_back(member_json(rank, m, st.target));
  return j.dump();
}

caf::error unauthorized(const std::string& what) {
  return caf::make_error(caf::sec::runtime_error,
                         "unauthorized: " + what + " needs the cluster token (token_file)");
}

// The answer of a lend hook, or its error as a CAF error.
caf::result<std::string, std::string> lent(const lend_fn& lend, int to, const std::string& ids) {
  if (!lend) return caf::make_error(caf::sec::runtime_error, "rows: this rank holds no dataset");
  auto r = lend(to, ids);
  if (!r) return caf::make_error(caf::sec::runtime_error, "rows: " + r.error().to_string());
  return {std::move(r->first), std::move(r->second)};
}

// (rows_atom, from, owner, ids): rank 0 lends its own rows, or asks the owner's
// member actor and passes its answer back.
caf::result<std::string, std::string> relay_rows(caf::stateful_actor<coordinator_state>* self,
                                                 int from, int owner, const std::string& ids) {
  if (!from_member(self, from, "rows")) return unauthorized("rows");
  if (owner == 0) return lent(self->state.lend, from, ids);
  const auto it = self->state.members.find(owner);
  if (it == self->state.members.end() || !it->second.alive)
    return caf::make_error(caf::sec::runtime_error,
                           "rows: rank " + std::to_string(owner) + " is not a live member");
  auto rp = self->make_response_promise<std::string, std::string>();
  self->request(caf::actor_cast<caf::actor>(it->second.addr), std::chrono::seconds(10),
                rows_atom::value, from, ids)
      .then([rp](std::string& d, std::string& held) mutable { rp.deliver(d, held); },
            [rp](caf::error& e) mutable { rp.deliver(e); });
  return rp;
}

caf::behavior coordinator(caf::stateful_actor<coordinator_state>* self, std::string name,
                          std::string descriptor, std::string bridge, std::string token,
                          std::string plan, lend_fn lend) {
  self->state.lend = std::move(lend);
  self->state.name = std::move(name);
  self->state.token = std::move(token);
  self->state.plan = std::move(plan);
  self->state.members[0] = {self->state.name, int(::getpid()),       true,   1,
                            self->address(),  std::move(descriptor), bridge, true};
  self->set_down_handler([=](caf::down_msg& dm) {
    for (auto& [rank, m] : self->state.members)
      if (m.addr == dm.source && m.alive) {
        m.alive = false;
        m.ready = false;  // a dead member serves nothing (it reports ready again on rejoin)
        log::warn("node {} (rank {}) is down: {}", m.name, rank, to_string(dm.reason));
      }
  });
  return {
      [=](join_atom, int rank, const std::string& who, int pid, const std::string& descriptor,
          const std::string& plan, const std::string& token) -> caf::result<ok_atom, std::string> {
        if (!transport::rpc::token_matches(token, self->state.token)) {
          log::warn("refused a join as rank {} ('{}'): wrong cluster token", rank,
                    who.substr(0, 64));
          return unauthorized("join");
        }
        if (rank <= 0) return caf::make_error(caf::sec::runtime_error, "join: rank must be > 0");
        // Ranks laid out by different plans would read each other's rows at the
        // wrong places: answers silently wrong. Refused by name instead.
        if (!plan.empty() && !self->state.plan.empty() && plan != self->state.plan) {
          log::warn("refused rank {} ('{}'): its placement plan {} is not rank 0's {}", rank,
                    who.substr(0, 64), plan.substr(0, 32), self->state.plan);
          return caf::make_error(
              caf::sec::runtime_error,
              "join: rank " + std::to_string(rank) + "'s placement plan " + plan.substr(0, 32) +
                  " is not rank 0's " + self->state.plan +
                  ": its dataset folder comes from another `spindle partition` run (or another "
                  "policy); give every rank the folders of one run");
        }
        auto sender = caf::actor_cast<caf::actor>(self->current_sender());
        auto& m = self->state.members[rank];
        m = {who, pid, true, m.joins + 1, sender.address(), descriptor, {}, false};
        m.node = sender.node();
        // A node (re)starts at the first plan; it migrates to the target by itself.
        self->monitor(sender);
        log::info("node {} (rank {}, pid {}) joined{}", who, rank, pid,
                  m.joins > 1 ? " again" : "");
        return {ok_atom::value, self->state.members[0].bridge};
      },
      [=](ready_atom, int rank, const std::string& bridge_address) {
        if (!from_member(self, rank, "ready")) return;
        auto it = self->state.members.find(rank);
        if (it == self->state.members.end()) return;
        it->second.bridge = bridge_address;
        it->second.ready = true;
      },
      [=](shard_atom, int rank, int epoch, const std::string& descriptor) {
        if (from_member(self, rank, "shard")) on_shard(self->state, rank, epoch, descriptor);
      },
      [=](retire_atom, int rank, int epoch) {
        if (from_member(self, rank, "retire")) on_retire(self->state, rank, epoch);
      },
      [=](reading_atom, int rank, int epoch, const std::string& problem) {
        if (!from_member(self, rank, "reading")) return;
        auto it = self->state.members.find(rank);
        if (it == self->state.members.end()) return;
        it->second.reading = epoch;
        if (!problem.empty() && problem != it->second.problem)
          log::error("placement: rank {} reads epoch {}: {}", rank, epoch, problem);
        it->second.problem = problem.substr(0, 1000);
      },
      [=](rows_atom, int from, int owner, const std::string& ids) {
        return relay_rows(self, from, owner, ids);
      },
      [=](plan_atom, int epoch, const std::string& fap) -> caf::result<ok_atom> {
        if (!trusted_sender(self)) return unauthorized("plan");  // rank 0's placement only
        if (epoch <= self->state.target.epoch)
          return caf::make_error(caf::sec::runtime_error,
                                 "plan: epoch " + std::to_string(epoch) + " is not after " +
                                     std::to_string(self->state.target.epoch));
        // One migration at a time: every live shard holder is on the target and
        // has freed its old shard (a node tracks one old shard at most).
        for (const auto& [rank, m] : self->state.members)
          if (m.alive && !m.descriptor.empty() &&
              (m.epoch != self->state.target.epoch || m.reading != m.epoch || m.old_epoch >= 0))
            return caf::make_error(caf::sec::runtime_error,
                                   "plan: epoch " + std::to_string(self->state.target.epoch) +
                                       " is still being applied (rank " + std::to_string(rank) +
                                       ")");
        self->state.target = {epoch, fap};
        log::info("placement: target plan is now epoch {}", epoch);
        return ok_atom::value;
      },
      [=](status_atom) -> caf::result<std::string> {
        if (!trusted_sender(self)) return unauthorized("status");
        return status_json(self->state);
      },
      // The GNNs loaded at run time, which every node with a door serves.
      [=](models_atom, const std::string& token) -> caf::result<std::string> {
        if (!transport::rpc::token_matches(token, self->state.token)) return unauthorized("models");
        return nlohmann::json(self->state.models).dump();
      },
      [=](models_atom, const std::string& op, const std::string& name, const std::string& path,
          const std::string& token) -> caf::result<ok_atom> {
        if (!transport::rpc::token_matches(token, self->state.token)) return unauthorized("models");
        if (op == "add") {
          self->state.models[name] = path;
        } else if (op == "remove") {
          self->state.models.erase(name);
        } else {
          return caf::make_error(caf::sec::runtime_error, "models: unknown change '" + op + "'");
        }
        log::info("cluster models: {} '{}'{}", op == "add" ? "serving" : "no longer serving",
                  name, op == "add" ? " from " + path : std::string());
        return ok_atom::value;
      },
      [=](status_atom, const std::string& token) -> caf::result<std::string> {
        if (!transport::rpc::token_matches(token, self->state.token)) return unauthorized("status");
        return status_json(self->state);
      },
  };
}

caf::behavior member_actor(caf::event_based_actor* self, caf::actor coord, member_options o) {
  self->monitor(coord);
  self->set_down_handler([=](caf::down_msg&) {
    log::warn("{}: coordinator is down", o.name);
    if (o.on_coordinator_down) o.on_coordinator_down();
  });
  self->request(coord, std::chrono::seconds(10), join_atom::value, o.rank, o.name, int(::getpid()),
                o.descriptor, o.plan, o.token)
      .then(
          [=](ok_atom, const std::string& coordinator_bridge) {
            log::info("{} (rank {}) joined the cluster", o.name, o.rank);
            // Replies to the coordinator's batches travel over the UCX bridge.
            if (o.bridge && !coordinator_bridge.empty())
              self->send(o.bridge, peer_atom::value, 0, coordinator_bridge);
            if (!o.serves_batches) self->send(coord, ready_atom::value, o.rank, std::string());
          },
          [=](caf::error& e) {
            log::error("{}: join failed: {}", o.name, to_string(e));
            // Refused (the coordinator answered): the member cannot serve. A join
            // that timed out waits, as before, for the coordinator to be seen down.
            if (o.on_join_failed && e != caf::sec::request_timeout) o.on_join_failed(error_text(e));
          });
  return {
      [=](status_atom) {
        return nlohmann::json{{"rank", o.rank}, {"name", o.name}, {"pid", int(::getpid())}}.dump();
      },
      // Its pipeline is registered at its bridge: tell the coordinator where to send batches.
      [=](ready_atom, const std::string& bridge_address) {
        self->send(coord, ready_atom::value, o.rank, bridge_address);
      },
      // Rows of its own copy lent to a rank building its shard: asked by the coordinator only.
      [=](rows_atom, int to, const std::string& ids) -> caf::result<std::string, std::string> {
        if (caf::actor_cast<caf::actor_addr>(self->current_sender()) != coord.address())
          return caf::make_error(caf::sec::runtime_error, "rows: only the coordinator asks");
        return lent(o.lend, to, ids);
      },
  };
}

}  // namespace

caf::actor spawn_coordinator(caf::actor_system& sys, std::string name, std::string descriptor,
                             std::string bridge, std::string token, std::string plan,
                             lend_fn lend) {
  return sys.spawn(coordinator, std::move(name), std::move(descriptor), std::move(bridge),
                   std::move(token), std::move(plan), std::move(lend));
}

caf::actor spawn_member(caf::actor_system& sys, caf::actor coordinator, member_options options) {
  return sys.spawn(member_actor, std::move(coordinator), std::move(options));
}

}  // namespace spindle::actors
