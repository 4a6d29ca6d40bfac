#include "runtime/hps_stack.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>

#include "actors/updater_actor.hpp"
#include "core/log.hpp"
#include "hps/updates/update_stream.hpp"
#include "hps/vdb/redis_connection.hpp"
#include "hps/warm_up.hpp"

namespace spindle::runtime {

expected<config::hps_config> hps_settings(const hps_stack_args& a) {
  config::hps_config c;
  c.defaults.cache_fraction = a.cache_fraction;
  c.defaults.hit_rate_threshold = a.threshold;
  c.defaults.vdb_partitions = a.partitions;
  c.refresh_interval_ms = a.refresh_ms;
  SPINDLE_ASSIGN_OR_RETURN(c, config::load_hps_config(a.model + "/model.toml", c));
  if (!a.hps_config.empty()) {
    SPINDLE_ASSIGN_OR_RETURN(c, config::load_hps_config(a.hps_config, c));
  }
  return c;
}

static hps::vdb_options vdb_options_of(const config::hps_table_config& t) {
  hps::vdb_options o;
  o.partitions = t.vdb_partitions;
  o.overflow_margin = t.overflow_margin;
  o.overflow_resolution = t.overflow_resolution;
  o.policy = *hps::parse_eviction_policy(t.eviction_policy);  // validated by config
  return o;
}

expected<hps_stack> open_stack(const hps_stack_args& a, const config::model_desc& d,
                               const config::hps_config& hc) {
  hps_stack s;
  SPINDLE_ASSIGN_OR_RETURN(s.pdb, hps::persistent_db::open(a.pdb));
  // table_precision "int8": the L1 holds row-wise int8 rows (the VDB and PDB float32).
  if (d.table_precision != "fp32" && d.table_precision != "int8")
    return make_error(errc::unsupported,
                      "{}: model.table_precision = '{}': the parameter server's L1 holds fp32 "
                      "or int8 rows; serve it with --rec-model",
                      a.model, d.table_precision);
  const int bits = d.table_precision == "int8" ? 8 : 32;
  std::vector<hps::table_options> tables;
  for (std::size_t t = 0; t < d.table_rows.size(); ++t) {
    const std::string name = fmt::format("emb{}", t);
    if (!s.pdb->table_dim(name)) {  // first start: fill the PDB from the model's weights
      SPINDLE_TRY(s.pdb->bulk_load_safetensors(name, a.model + "/" + d.weights,
                                               fmt::format("emb_l.{}.weight", t)));
    }
    const auto& tc = hc.for_table(name);
    tables.push_back({name, std::uint32_t(d.embedding_dim), std::uint64_t(d.table_rows[t]),
                      tc.cache_fraction, tc.hit_rate_threshold, tc.default_value,
                      tc.slabs_per_set, bits});
  }
  const hps::vdb_options vo = vdb_options_of(hc.defaults);
  if (a.vdb == "hash_map") {
    SPINDLE_ASSIGN_OR_RETURN(s.vdb, hps::make_hash_map_vdb(vo));
  } else if (a.vdb == "redis") {
    SPINDLE_ASSIGN_OR_RETURN(auto ep, hps::parse_endpoint(a.vdb_redis));
    SPINDLE_ASSIGN_OR_RETURN(s.vdb, hps::make_redis_vdb(vo, ep.first, ep.second));
  }
  for (const auto& t : tables) {
    if (s.vdb && hc.tables.count(t.name))
      SPINDLE_TRY(s.vdb->configure_table(t.name, vdb_options_of(hc.for_table(t.name))));
  }
  hps::session_options so;
  so.l1_gpus = hc.l1_gpus;
  SPINDLE_ASSIGN_OR_RETURN(auto session,
                           hps::lookup_session::create(tables, s.vdb.get(), s.pdb.get(), so));
  s.session = std::move(session);
  if (a.warm_up) {
    // A shared Redis is warmed once, by whoever loads it: here only the in-process map.
    auto* vdb = a.vdb == "hash_map" ? s.vdb.get() : nullptr;
    SPINDLE_TRY(hps::warm_up(*s.session, *s.pdb, vdb).error_or_ok());  // logs each table
  }
  return s;
}

expected<actors::updater_actor> follow_updates(caf::actor_system& sys, const hps_stack_args& a,
                                               const config::model_desc& d, hps_stack& stack) {
  if (a.updates.empty()) return actors::updater_actor{};
  auto ep = hps::parse_endpoint(a.updates);
  if (!ep) return std::move(ep).error().with_context("--updates: ");
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  hps::consumer_options co;
  co.consumer = a.consumer.empty() ? std::string(host) : a.consumer;
  co.group = !a.updates_group.empty()
                 ? a.updates_group
                 : fmt::format("spindle@{}:{}", host, std::filesystem::absolute(a.pdb).string());
  for (std::size_t t = 0; t < d.table_rows.size(); ++t) co.tables.push_back(fmt::format("emb{}", t));
  co.table_rows.assign(d.table_rows.begin(), d.table_rows.end());
  auto consumer = hps::update_consumer::connect(ep->first, ep->second, co);
  if (!consumer) return std::move(consumer).error().with_context("--updates " + a.updates + ": ");
  log::info("following online updates of {} tables from {} (group {}, consumer {})",
            co.tables.size(), a.updates, co.group, co.consumer);
  return actors::spawn_updater(sys, std::move(*consumer), stack.vdb.get(), stack.pdb.get());
}

}  // namespace spindle::runtime
