// The parameter-server stack a serving command opens for a DLRM: settings from
// flags, the model's [hps] section and --hps-config; the RocksDB PDB (filled
// from the model's weights on first start); the VDB; the lookup session. Shared
// by `spindle serve-dlrm` and `spindle serve --dlrm-model`, with the updater
// that follows online updates from Redis Streams into the PDB and VDB (--updates).
#pragma once

#include <memory>
#include <string>

#include "config/hps.hpp"
#include "config/model.hpp"
#include "actors/hps_messages.hpp"
#include "hps/lookup_session.hpp"

namespace spindle::runtime {

struct hps_stack_args {
  std::string hps_config, model, pdb, vdb = "hash_map", vdb_redis;
  double cache_fraction = 0.1, threshold = 0.8;
  std::uint32_t refresh_ms = 0, partitions = 16;
  bool warm_up = true;  // fill the in-process VDB (and an L1 that holds a whole table) at start
  // Online updates (HPS §6): Redis HOST:PORT of the streams, this server's
  // consumer group (empty: one of its own, from the host and the PDB's path, as
  // each server applies every update to its own PDB) and consumer name (empty:
  // the host name).
  std::string updates, updates_group, consumer;
};

struct hps_stack {
  std::unique_ptr<hps::persistent_db> pdb;
  std::unique_ptr<hps::volatile_db> vdb;
  std::shared_ptr<hps::lookup_session> session;
};

/// Flags give the defaults; the model's model.toml [hps] section, then --hps-config, win.
expected<config::hps_config> hps_settings(const hps_stack_args& a);

/// Opens PDB (bulk-loading missing tables from the model), VDB and session for model `d`.
expected<hps_stack> open_stack(const hps_stack_args& a, const config::model_desc& d,
                               const config::hps_config& hc);

/// With --updates: the updater actor applying the streams of `d`'s tables
/// (emb0, emb1, ...) to `stack`'s VDB and PDB, which must outlive it (stop it
/// with stop_updates). Without: a null handle. Errors name the flag.
expected<actors::updater_actor> follow_updates(caf::actor_system& sys, const hps_stack_args& a,
                                               const config::model_desc& d, hps_stack& stack);

/// Stops actor `h` (the updater, the embedding cache: actors that use the stack)
/// and waits until it has ended, so the stack can go after it (an updater's poll
/// blocks up to 200 ms). A null handle is left as it is.
template <class Handle>
void stop_and_wait(caf::actor_system& sys, Handle& h) {
  if (!h) return;
  caf::scoped_actor self{sys};
  self->monitor(h);
  self->send_exit(h, caf::exit_reason::user_shutdown);
  self->receive([](const caf::down_msg&) {}, caf::after(std::chrono::seconds(10)) >> [] {});
  h = Handle{};
}

}  // namespace spindle::runtime
