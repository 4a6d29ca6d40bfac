#include "runtime/door_stack.hpp"

namespace spindle::runtime {

status serve_door_stack(caf::actor_system& sys, const front_door_args& a, door_stack s,
                        const std::string& token, const std::vector<int>& also,
                        const std::function<bool(int)>& on_also, int* stopped_by) {
  actors::gateway gw(sys);
  for (auto& b : s.gnns) gw.add_model(std::move(b));
  for (auto& b : s.recs) gw.add_model(std::move(b));
  if (s.live) gw.set_live_graph(s.live, s.doors_update);
  if (s.graph_stream) gw.set_graph_stream(std::move(s.graph_stream));
  if (s.members) gw.set_members(std::move(s.members));
  // Holds the DLRM's stack (if any) until the gateway is gone.
  SPINDLE_ASSIGN_OR_RETURN(auto dlrm, add_rec_serving(sys, gw, a, std::move(s.loader)));
  if (s.before_serving) SPINDLE_TRY(s.before_serving(gw));
  auto attached = s.while_serving ? s.while_serving(gw) : nullptr;
  auto served = serve_until_signal(gw, a, token, also, on_also, stopped_by);
  attached.reset();
  if (s.on_stop) s.on_stop();
  return served;
}

}  // namespace spindle::runtime
