#include "actors/updater_actor.hpp"

#include "core/log.hpp"

namespace spindle::actors {
namespace {

struct updater_state {
  std::unique_ptr<hps::update_consumer> consumer;
  hps::volatile_db* vdb = nullptr;
  hps::persistent_db* pdb = nullptr;
};

updater_actor::behavior_type updater_behavior(updater_actor::stateful_pointer<updater_state> self,
                                              std::shared_ptr<hps::update_consumer> consumer,
                                              hps::volatile_db* vdb, hps::persistent_db* pdb) {
  self->state.consumer = std::make_unique<hps::update_consumer>(std::move(*consumer));
  self->state.vdb = vdb;
  self->state.pdb = pdb;
  self->send(self, poll_atom::value);
  return {
      [=](poll_atom) {
        auto& st = self->state;
        auto n = st.consumer->poll([&](const hps::update_batch& b) {
          return hps::apply_update(b, st.vdb, st.pdb);
        });
        if (n) {
          self->send(self, poll_atom::value);  // each poll blocks at most block_ms
        } else {
          log::warn("updater: {}; retrying in 1 s", n.error().to_string());
          self->delayed_send(self, std::chrono::seconds(1), poll_atom::value);
        }
      },
      [=](hps_stats_atom) -> hps::consumer_stats { return self->state.consumer->stats(); },
  };
}

}  // namespace

updater_actor spawn_updater(caf::actor_system& sys, hps::update_consumer consumer,
                            hps::volatile_db* vdb, hps::persistent_db* pdb) {
  auto boxed = std::make_shared<hps::update_consumer>(std::move(consumer));
  return sys.spawn<caf::detached>(updater_behavior, std::move(boxed), vdb, pdb);
}

}  // namespace spindle::actors
