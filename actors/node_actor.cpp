#include "actors/node_actor.hpp"

#include <unistd.h>

#include <map>
#include <nlohmann/json.hpp>

#include "core/log.hpp"

namespace spindle::actors {
namespace {

struct member {
  std::string name;
  int pid = 0;
  bool alive = false;
  int joins = 0;
  caf::actor_addr addr;
  std::string descriptor;  // the node's feature-shard region (UCX), empty if none
};

struct coordinator_state {
  std::string name;
  std::map<int, member> members;
};

caf::behavior coordinator(caf::stateful_actor<coordinator_state>* self, std::string name) {
  self->state.name = std::move(name);
  self->state.members[0] = {self->state.name, int(::getpid()), true, 1, self->address(), {}};
  self->set_down_handler([=](caf::down_msg& dm) {
    for (auto& [rank, m] : self->state.members)
      if (m.addr == dm.source && m.alive) {
        m.alive = false;
        log::warn("node {} (rank {}) is down: {}", m.name, rank, to_string(dm.reason));
      }
  });
  return {
      [=](join_atom, int rank, const std::string& who, int pid, const std::string& descriptor) {
        auto sender = caf::actor_cast<caf::actor>(self->current_sender());
        auto& m = self->state.members[rank];
        m = {who, pid, true, m.joins + 1, sender.address(), descriptor};
        self->monitor(sender);
        log::info("node {} (rank {}, pid {}) joined{}", who, rank, pid,
                  m.joins > 1 ? " again" : "");
        return ok_atom::value;
      },
      [=](status_atom) {
        nlohmann::json j = nlohmann::json::array();
        for (const auto& [rank, m] : self->state.members)
          j.push_back({{"rank", rank},
                       {"name", m.name},
                       {"pid", m.pid},
                       {"alive", m.alive},
                       {"joins", m.joins},
                       {"descriptor", m.descriptor}});
        return j.dump();
      },
  };
}

caf::behavior member_actor(caf::event_based_actor* self, caf::actor coord, int rank,
                           std::string name, std::string descriptor) {
  self->monitor(coord);
  self->set_down_handler([=](caf::down_msg&) { log::warn("{}: coordinator is down", name); });
  self->request(coord, std::chrono::seconds(10), join_atom::value, rank, name, int(::getpid()),
                descriptor)
      .then([=](ok_atom) { log::info("{} (rank {}) joined the cluster", name, rank); },
            [=](caf::error& e) { log::error("{}: join failed: {}", name, to_string(e)); });
  return {
      [=](status_atom) {
        return nlohmann::json{{"rank", rank}, {"name", name}, {"pid", int(::getpid())}}.dump();
      },
  };
}

}  // namespace

caf::actor spawn_coordinator(caf::actor_system& sys, std::string name) {
  return sys.spawn(coordinator, std::move(name));
}

caf::actor spawn_member(caf::actor_system& sys, caf::actor coordinator, int rank, std::string name,
                        std::string descriptor) {
  return sys.spawn(member_actor, std::move(coordinator), rank, std::move(name),
                   std::move(descriptor));
}

}  // namespace spindle::actors
