#include "actors/router_actor.hpp"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

namespace spindle::actors {
namespace {

// JSON cannot hold infinity or NaN: they are written as null.
nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }

std::string describe(const serving::psgs_router& t, const std::function<std::string()>& owners) {
  const auto& c = t.calibration();
  nlohmann::json j = {{"policy", std::string(serving::to_string(t.policy()))},
                      {"threshold", number(t.threshold())},
                      {"override", number(t.threshold_override())},
                      {"points",
                       {{"latency_preferred", number(c.latency_preferred.psgs)},
                        {"throughput_preferred", number(c.throughput_preferred.psgs)},
                        {"cpu_preferred", number(c.cpu_preferred.psgs)},
                        {"gpu_preferred", number(c.gpu_preferred.psgs)}}},
                      {"executors", {c.small.executor, c.large.executor}}};
  if (owners) j["owners"] = nlohmann::json::parse(owners(), nullptr, false);
  return j.dump();
}

router_actor::behavior_type router(router_actor::pointer self,
                                   std::shared_ptr<serving::psgs_router> table,
                                   batcher_actor batcher, std::function<std::string()> owners) {
  auto push = [=] {
    self->send(batcher, threshold_atom::value, batch_close_threshold(table->threshold()));
  };
  return {
      [=](policy_atom, serving::routing_policy p) {
        table->set_policy(p);
        push();
      },
      [=](threshold_atom, double psgs) {
        table->set_threshold_override(psgs);
        push();
      },
      [=](caf::get_atom) { return describe(*table, owners); },
  };
}

}  // namespace

double batch_close_threshold(double routing_point) {
  return routing_point > 0 && std::isfinite(routing_point)
             ? routing_point
             : std::numeric_limits<double>::infinity();
}

router_actor spawn_router(caf::actor_system& sys, std::shared_ptr<serving::psgs_router> table,
                          batcher_actor batcher, std::function<std::string()> owners) {
  return sys.spawn(router, std::move(table), std::move(batcher), std::move(owners));
}

}  // namespace spindle::actors
