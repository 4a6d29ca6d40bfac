#include "actors/node_actor.hpp"

#include <unistd.h>

#include <map>
#include <nlohmann/json.hpp>

#include "actors/bridge_messages.hpp"
#include "actors/coordinator_state.hpp"
#include "config/cluster_ranks.hpp"
#include "core/log.hpp"
#include "transport/rpc/rpc_types.hpp"

namespace spindle::actors {
namespace {

using coordinator_rules::coordinator_state;

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
    log::warn(
        "ignored a '{}' message for rank {} from a process that did not join as it ({} so "
        "far)",
        what, rank, dropped);
  return false;
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

// A member serves batches at `bridge_address` with `pipelines` pipelines (0: unsaid).
void on_ready(caf::stateful_actor<coordinator_state>* self, int rank,
              const std::string& bridge_address, int pipelines) {
  if (!from_member(self, rank, "ready")) return;
  auto it = self->state.members.find(rank);
  if (it == self->state.members.end()) return;
  it->second.bridge = bridge_address;
  it->second.pipelines = std::max(0, pipelines);
  it->second.ready = true;
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

struct join_request {
  int rank;
  std::string who;
  int pid;
  std::string descriptor, plan, token;
  std::string address;  // a rank joining past the TOML's: its HOST:PORT (else empty)
};

caf::result<ok_atom, std::string> accept_join(caf::stateful_actor<coordinator_state>* self,
                                              const join_request& j) {
  const int rank = j.rank;
  const auto& who = j.who;
  if (!transport::rpc::token_matches(j.token, self->state.token)) {
    log::warn("refused a join as rank {} ('{}'): wrong cluster token", rank, who.substr(0, 64));
    return unauthorized("join");
  }
  if (rank <= 0) return caf::make_error(caf::sec::runtime_error, "join: rank must be > 0");
  const std::string why =
      j.address.empty() ? std::string() : coordinator_rules::joiner_refusal(self->state, rank);
  if (!why.empty()) {
    log::warn("refused rank {} ('{}') at {}: {}", rank, who.substr(0, 64), j.address, why);
    return caf::make_error(caf::sec::runtime_error, why);
  }
  // Ranks laid out by different plans would read each other's rows at the
  // wrong places: answers silently wrong. Refused by name instead.
  if (!j.plan.empty() && !self->state.plan.empty() && j.plan != self->state.plan) {
    log::warn("refused rank {} ('{}'): its placement plan {} is not rank 0's {}", rank,
              who.substr(0, 64), j.plan.substr(0, 32), self->state.plan);
    return caf::make_error(
        caf::sec::runtime_error,
        "join: rank " + std::to_string(rank) + "'s placement plan " + j.plan.substr(0, 32) +
            " is not rank 0's " + self->state.plan +
            ": its dataset folder comes from another `spindle partition` run (or another "
            "policy); give every rank the folders of one run");
  }
  auto sender = caf::actor_cast<caf::actor>(self->current_sender());
  auto& m = self->state.members[rank];
  m = {who, j.pid, true, m.joins + 1, sender.address(), j.descriptor, {}, false};
  m.node = sender.node();
  m.address = j.address;
  // A node (re)starts at the first plan; it migrates to the target by itself.
  self->monitor(sender);
  log::info("node {} (rank {}, pid {}) joined{}{}", who, rank, j.pid, m.joins > 1 ? " again" : "",
            j.address.empty() ? "" : " the running cluster from " + j.address);
  return {ok_atom::value, self->state.members[0].bridge};
}

caf::behavior coordinator(caf::stateful_actor<coordinator_state>* self, std::string name,
                          std::string descriptor, std::string bridge, std::string token,
                          std::string plan, lend_fn lend, int ranks) {
  self->state.lend = std::move(lend);
  self->state.ranks = ranks;
  self->state.target.servers = ranks;
  self->state.from.servers = ranks;
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
          const std::string& plan, const std::string& token) {
        return accept_join(self, {rank, who, pid, descriptor, plan, token, {}});
      },
      [=](join_atom, int rank, const std::string& who, int pid, const std::string& descriptor,
          const std::string& plan, const std::string& token, const std::string& address) {
        return accept_join(self, {rank, who, pid, descriptor, plan, token, address});
      },
      [=](leave_atom, int rank, const std::string& token) -> caf::result<ok_atom> {
        if (!transport::rpc::token_matches(token, self->state.token)) return unauthorized("leave");
        if (auto why = coordinator_rules::leave_refusal(self->state, rank); !why.empty())
          return caf::make_error(caf::sec::runtime_error, why);
        self->state.members[rank].leaving = true;
        log::info("node {} (rank {}) leaves: the placement re-plans over {}",
                  self->state.members[rank].name, rank,
                  to_string(coordinator_rules::wanted_ranks(self->state)));
        return ok_atom::value;
      },
      [=](ready_atom, int rank, const std::string& bridge_address) {
        on_ready(self, rank, bridge_address, 0);
      },
      [=](ready_atom, int rank, const std::string& bridge_address, int pipelines) {
        on_ready(self, rank, bridge_address, pipelines);
      },
      [=](shard_atom, int rank, int epoch, const std::string& descriptor) {
        if (from_member(self, rank, "shard"))
          coordinator_rules::on_shard(self->state, rank, epoch, descriptor);
      },
      [=](retire_atom, int rank, int epoch) {
        if (from_member(self, rank, "retire"))
          coordinator_rules::on_retire(self->state, rank, epoch);
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
      [=](plan_atom, int epoch, const std::string& fap, int servers,
          std::uint64_t absent) -> caf::result<ok_atom> {
        if (!trusted_sender(self)) return unauthorized("plan");  // rank 0's placement only
        if (epoch <= self->state.target.epoch)
          return caf::make_error(caf::sec::runtime_error,
                                 "plan: epoch " + std::to_string(epoch) + " is not after " +
                                     std::to_string(self->state.target.epoch));
        // One migration at a time: every live shard holder is on the target and
        // has freed its old shard (a node tracks one old shard at most).
        if (const int rank = coordinator_rules::rank_applying(self->state); rank >= 0) {
          auto why = coordinator_rules::unfinishable_target(self->state);
          return caf::make_error(caf::sec::runtime_error,
                                 !why.empty() ? why
                                              : fmt::format("plan: epoch {} is still being "
                                                            "applied (rank {})",
                                                            self->state.target.epoch, rank));
        }
        if (servers < 1)
          return caf::make_error(caf::sec::runtime_error,
                                 "plan: " + std::to_string(servers) + " ranks");
        // Made from a member list read before a rank joined, died or left: it
        // could hold a dead rank's rows or leave a live one absent.
        const config::plan_ranks asked{servers, absent};
        if (const auto now = coordinator_rules::wanted_ranks(self->state); asked != now)
          return caf::make_error(caf::sec::runtime_error,
                                 fmt::format("plan: epoch {} is over {}, but the cluster now "
                                             "has {}",
                                             epoch, to_string(asked), to_string(now)));
        self->state.from = self->state.target;
        self->state.target = {epoch, fap, servers, absent};
        log::info("placement: target plan is now epoch {} over {}", epoch,
                  to_string(self->state.target.ranks()));
        return ok_atom::value;
      },
      [=](status_atom) -> caf::result<std::string> {
        if (!trusted_sender(self)) return unauthorized("status");
        return coordinator_rules::status_json(self->state);
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
        log::info("cluster models: {} '{}'{}", op == "add" ? "serving" : "no longer serving", name,
                  op == "add" ? " from " + path : std::string());
        return ok_atom::value;
      },
      [=](status_atom, const std::string& token) -> caf::result<std::string> {
        if (!transport::rpc::token_matches(token, self->state.token)) return unauthorized("status");
        return coordinator_rules::status_json(self->state);
      },
  };
}

caf::behavior member_actor(caf::event_based_actor* self, caf::actor coord, member_options o) {
  self->monitor(coord);
  self->set_down_handler([=](caf::down_msg&) {
    log::warn("{}: coordinator is down", o.name);
    if (o.on_coordinator_down) o.on_coordinator_down();
  });
  auto joined =
      o.address.empty()
          ? self->request(coord, std::chrono::seconds(10), join_atom::value, o.rank, o.name,
                          int(::getpid()), o.descriptor, o.plan, o.token)
          : self->request(coord, std::chrono::seconds(10), join_atom::value, o.rank, o.name,
                          int(::getpid()), o.descriptor, o.plan, o.token, o.address);
  std::move(joined).then(
      [=](ok_atom, const std::string& coordinator_bridge) {
        log::info("{} (rank {}) joined the cluster", o.name, o.rank);
        // Replies to the coordinator's batches travel over the UCX bridge.
        if (o.bridge && !coordinator_bridge.empty())
          self->send(o.bridge, peer_atom::value, 0, coordinator_bridge);
        if (!o.serves_batches) self->send(coord, ready_atom::value, o.rank, std::string());
      },
      [=](caf::error& e) {
        log::error("{}: join failed: {}", o.name, error_text(e));
        // Refused (the coordinator answered): the member cannot serve. A join
        // that timed out waits, as before, for the coordinator to be seen down.
        if (o.on_join_failed && e != caf::sec::request_timeout) o.on_join_failed(error_text(e));
      });
  return {
      [=](status_atom) {
        return nlohmann::json{{"rank", o.rank}, {"name", o.name}, {"pid", int(::getpid())}}.dump();
      },
      // Its pipeline is registered at its bridge: tell the coordinator where to send batches.
      [=](ready_atom, const std::string& bridge_address, int pipelines) {
        self->send(coord, ready_atom::value, o.rank, bridge_address, pipelines);
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
                             std::string bridge, std::string token, std::string plan, lend_fn lend,
                             int ranks) {
  return sys.spawn(coordinator, std::move(name), std::move(descriptor), std::move(bridge),
                   std::move(token), std::move(plan), std::move(lend), ranks);
}

caf::actor spawn_member(caf::actor_system& sys, caf::actor coordinator, member_options options) {
  return sys.spawn(member_actor, std::move(coordinator), std::move(options));
}

}  // namespace spindle::actors
