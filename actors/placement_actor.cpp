#include "actors/placement_actor.hpp"

#include "actors/node_actor.hpp"
#include "core/log.hpp"
#include "features/access_stats.hpp"

namespace spindle::actors {
namespace {

struct placement_state {
  features::drift_monitor monitor{{}, 0, 0};
  placement_options options;
  placement_hooks hooks;
  caf::actor coordinator;
  placement_stats stats;
  bool busy = false;  // a re-plan is waiting for the coordinator
};

using self_ptr = placement_actor::stateful_pointer<placement_state>;

// Publishes the window's observed FAP and asks the coordinator to make it the
// target of the next epoch; `done` gets the epoch or the error.
void replan(self_ptr self, config::plan_ranks ranks, std::function<void(expected<int>)> done) {
  auto& st = self->state;
  if (st.busy) return done(make_error(errc::unavailable, "a re-plan is already in progress"));
  auto obs = st.hooks.observe();
  const std::uint64_t requests = obs.second;
  auto counts = std::make_shared<std::vector<std::uint32_t>>(std::move(obs.first));
  auto fap = std::make_shared<std::vector<double>>(st.monitor.replan_fap(*counts, requests));
  const int epoch = st.stats.epoch + 1;
  auto desc = st.hooks.publish(epoch, *fap, ranks);
  if (!desc) return done(desc.error());
  st.busy = true;
  self->request(st.coordinator, std::chrono::seconds(10), plan_atom::value, epoch, *desc,
                ranks.count, ranks.absent)
      .then(
          [=](ok_atom) {
            auto& s = self->state;
            s.busy = false;
            s.monitor.rebase(*fap, *counts, requests);
            s.stats.epoch = epoch;
            s.stats.servers = ranks.count;
            s.stats.absent = ranks.absent;
            s.stats.last_error.clear();
            ++s.stats.replans;
            log::info("placement: re-planned from {} observed requests (epoch {}, {})",
                      requests, epoch, to_string(ranks));
            done(epoch);
          },
          [=](caf::error& e) {
            self->state.busy = false;
            done(make_error(errc::unavailable, "placement: coordinator refused epoch {}: {}", epoch,
                            to_string(e)));
          });
}

void check(self_ptr self) {
  auto& st = self->state;
  const auto obs = st.hooks.observe();
  const auto r = st.monitor.observe(obs.first, obs.second);
  st.stats.drift = r.drift;
  st.stats.window_requests = r.window_requests;
  const auto wanted = st.hooks.ranks ? st.hooks.ranks() : config::plan_ranks{};
  const bool resize = wanted.count > 0 && wanted != st.stats.ranks();
  if ((!r.replan && !resize) || st.busy) return;
  if (st.stats.last_error.empty() && resize)
    log::info("placement: the cluster has {}, the plan {}: re-planning", to_string(wanted),
              to_string(st.stats.ranks()));
  else if (st.stats.last_error.empty())
    log::info("placement: FAP drift {:.3f} over {} requests passed {:.3f}: re-planning", r.drift,
              r.window_requests, st.monitor.threshold());
  replan(self, resize ? wanted : st.stats.ranks(), [self](expected<int> e) {
    if (e) return;
    // Refused while the last re-plan is still being applied: said once, retried.
    if (self->state.stats.last_error != e.error().to_string())
      log::info("{} (retrying)", e.error().to_string());
    self->state.stats.last_error = e.error().to_string();
  });
}

placement_actor::behavior_type placement(self_ptr self, caf::actor coordinator, std::vector<double> planned,
                        placement_options options, placement_hooks hooks) {
  auto& st = self->state;
  st.monitor =
      features::drift_monitor(std::move(planned), options.drift_threshold, options.min_requests);
  st.options = options;
  st.hooks = std::move(hooks);
  st.coordinator = std::move(coordinator);
  st.stats.threshold = options.drift_threshold;
  st.stats.servers = options.servers;
  self->send(self, tick_atom::value);
  return {
      [=](tick_atom) {
        check(self);
        self->delayed_send(self, self->state.options.check, tick_atom::value);
      },
      [=](replan_atom) -> caf::result<int> {
        auto rp = self->make_response_promise<int>();
        replan(self, self->state.stats.ranks(), [self, rp](expected<int> e) mutable {
          if (e) {
            rp.deliver(*e);
            return;
          }
          self->state.stats.last_error = e.error().to_string();
          rp.deliver(caf::make_error(caf::sec::runtime_error, e.error().to_string()));
        });
        return rp;
      },
      [=](threshold_atom, double t) {
        self->state.monitor.set_threshold(t);
        self->state.stats.threshold = t;
      },
      [=](caf::get_atom) { return self->state.stats; },
  };
}

}  // namespace

placement_actor spawn_placement(caf::actor_system& sys, caf::actor coordinator,
                           std::vector<double> planned_fap, placement_options options,
                           placement_hooks hooks) {
  return sys.spawn(placement, std::move(coordinator), std::move(planned_fap), options,
                   std::move(hooks));
}

}  // namespace spindle::actors
