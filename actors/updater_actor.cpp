#include "actors/updater_actor.hpp"

#include "core/log.hpp"

namespace spindle::actors {
namespace {

struct updater_state {
  std::unique_ptr<embedding::update_consumer> consumer;
  embedding::volatile_db* vdb = nullptr;
  embedding::persistent_db* pdb = nullptr;
};

caf::behavior updater_actor(caf::stateful_actor<updater_state>* self,
                            std::shared_ptr<embedding::update_consumer> consumer,
                            embedding::volatile_db* vdb, embedding::persistent_db* pdb) {
  self->state.consumer = std::make_unique<embedding::update_consumer>(std::move(*consumer));
  self->state.vdb = vdb;
  self->state.pdb = pdb;
  self->send(self, poll_atom::value);
  return {
      [=](poll_atom) {
        auto& st = self->state;
        auto n = st.consumer->poll([&](const embedding::update_batch& b) {
          return embedding::apply_update(b, st.vdb, st.pdb);
        });
        if (n) {
          self->send(self, poll_atom::value);  // each poll blocks at most block_ms
        } else {
          log::warn("updater: {}; retrying in 1 s", n.error().to_string());
          self->delayed_send(self, std::chrono::seconds(1), poll_atom::value);
        }
      },
      [=](hps_stats_atom) -> embedding::consumer_stats { return self->state.consumer->stats(); },
  };
}

}  // namespace

caf::actor spawn_updater(caf::actor_system& sys, embedding::update_consumer consumer,
                         embedding::volatile_db* vdb, embedding::persistent_db* pdb) {
  auto boxed = std::make_shared<embedding::update_consumer>(std::move(consumer));
  return sys.spawn<caf::detached>(updater_actor, std::move(boxed), vdb, pdb);
}

}  // namespace spindle::actors
