#include "actors/embedding_cache_actor.hpp"

#include "core/log.hpp"

namespace spindle::actors {
namespace {

struct cache_state {
  std::shared_ptr<hps::lookup_session> session;
  std::uint32_t interval_ms = 0;
};

std::uint64_t refresh_all(hps::lookup_session& s) {
  std::uint64_t n = 0;
  for (std::size_t t = 0; t < s.table_count(); ++t) {
    auto r = s.refresh(t);
    if (r) {
      n += *r;
    } else {
      log::warn("embedding cache refresh of '{}': {}", s.table(t).name, r.error().to_string());
    }
  }
  return n;
}

embedding_cache_actor::behavior_type embedding_cache_behavior(
    embedding_cache_actor::stateful_pointer<cache_state> self,
    std::shared_ptr<hps::lookup_session> session, std::uint32_t interval_ms) {
  self->state.session = std::move(session);
  self->state.interval_ms = interval_ms;
  if (interval_ms > 0)
    self->delayed_send(self, std::chrono::milliseconds(interval_ms), tick_atom::value);
  return {
      [=](tick_atom) {
        refresh_all(*self->state.session);
        self->delayed_send(self, std::chrono::milliseconds(self->state.interval_ms),
                           tick_atom::value);
      },
      [=](refresh_atom) -> std::uint64_t { return refresh_all(*self->state.session); },
      [=](threshold_atom, const std::string& table, double threshold) -> bool {
        auto t = self->state.session->table_index(table);
        if (!t) return false;
        self->state.session->set_hit_rate_threshold(*t, threshold);
        return true;
      },
      [=](hps_stats_atom) -> hps_stats {
        hps_stats out;
        auto& s = *self->state.session;
        for (std::size_t t = 0; t < s.table_count(); ++t) {
          out.tables.push_back(s.table(t).name);
          out.stats.push_back(s.stats(t));
        }
        return out;
      },
  };
}

}  // namespace

embedding_cache_actor spawn_embedding_cache(caf::actor_system& sys,
                                            std::shared_ptr<hps::lookup_session> session,
                                            std::uint32_t refresh_interval_ms) {
  return sys.spawn<caf::detached>(embedding_cache_behavior, std::move(session),
                                  refresh_interval_ms);
}

}  // namespace spindle::actors
