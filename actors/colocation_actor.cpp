#include "actors/colocation_actor.hpp"

namespace spindle::actors {
namespace {

using tick_atom = caf::atom_constant<caf::atom("tick")>;

caf::behavior colocation_manager(caf::event_based_actor* self, gateway* gw) {
  self->delayed_send(self, std::chrono::milliseconds(1000), tick_atom::value);
  return {
      [=](tick_atom) { self->delayed_send(self, gw->manage_step(), tick_atom::value); },
  };
}

}  // namespace

caf::actor spawn_colocation_manager(caf::actor_system& sys, gateway& gw) {
  return sys.spawn<caf::detached>(colocation_manager, &gw);
}

}  // namespace spindle::actors
