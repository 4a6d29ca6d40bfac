#include "actors/feature_shard_actor.hpp"

#include "embedding/feature_shard.hpp"
#include "sched/placement/access_stats.hpp"

namespace spindle::actors {
namespace {

struct shard_state {
  std::unique_ptr<sched::access_counter> served;
};

caf::behavior feature_shard(caf::stateful_actor<shard_state>* self,
                            const sched::feature_lookup* lookup, sched::shard_index shard,
                            const std::byte* rows, std::uint32_t dim) {
  self->state.served = std::make_unique<sched::access_counter>(lookup->num_nodes());
  return {
      [=](bridge_call_atom, const caf::message& m) -> caf::result<bridge_reply> {
        if (!m.match_elements<gather_atom, gather_request>())
          return caf::make_error(
              caf::sec::runtime_error,
              "feature_shard: expected (gather, gather_request), got " + to_string(m));
        const auto& ids = m.get_as<gather_request>(1).ids;
        row_block block;
        auto& out = block.bytes;
        out.resize(ids.size() * dim * sizeof(float));
        auto st = embedding::copy_owned_rows(
            *lookup, shard, rows, dim, ids, {reinterpret_cast<std::byte*>(out.data()), out.size()});
        if (!st) return caf::make_error(caf::sec::runtime_error, st.to_string());
        self->state.served->add(ids);
        return bridge_reply{caf::make_message(std::move(block))};
      },
      [=](stats_atom) { return self->state.served->total(); },
  };
}

}  // namespace

caf::actor spawn_feature_shard(caf::actor_system& sys, const sched::feature_lookup& lookup,
                               sched::shard_index shard, const std::byte* rows, std::uint32_t dim) {
  return sys.spawn(feature_shard, &lookup, shard, rows, dim);
}

}  // namespace spindle::actors
