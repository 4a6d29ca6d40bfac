#include "actors/colocation_actor.hpp"

namespace spindle::actors {
namespace {

colocation_manager_actor::behavior_type colocation_manager(colocation_manager_actor::pointer self,
                                                           gateway* gw) {
  self->delayed_send(self, std::chrono::milliseconds(1000), tick_atom::value);
  return {
      [=](tick_atom) { self->delayed_send(self, gw->manage_step(), tick_atom::value); },
  };
}

}  // namespace

colocation_manager_actor spawn_colocation_manager(caf::actor_system& sys, gateway& gw) {
  return sys.spawn<caf::detached>(colocation_manager, &gw);
}

}  // namespace spindle::actors
