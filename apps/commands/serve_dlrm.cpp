// `spindle serve-dlrm`: the recommendation path in one process. Loads a DLRM
// without its tables, serves the tables through the hierarchical parameter
// server (L1 cache per table -> VDB -> RocksDB PDB, bulk-loaded from the model's
// weights when the PDB lacks them), optionally follows online updates from a
// Redis stream, and drives `--workload N` batches of synthetic requests (one
// Zipf-1.2 key per table per sample) through DLRM inference actors; prints
// samples/s, batch latency percentiles, the lookup/compute split and hit rates.
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "actors/dlrm_inference_actor.hpp"
#include "actors/embedding_cache_actor.hpp"
#include "actors/updater_actor.hpp"
#include "apps/commands/command.hpp"
#include "apps/commands/runtime_flags.hpp"
#include "hps/synthetic_keys.hpp"
#include "runtime/hps_stack.hpp"

namespace spindle::apps {

using namespace runtime;  // the node runtime these commands start
namespace {

struct dlrm_args : hps_stack_args {
  int instances = 2, batch = 256;
  std::size_t workload = 0;
  std::uint64_t seed = 1;
  bool json = false;
};

actors::dlrm_request make_request(const config::model_desc& d, int batch,
                                  std::vector<hps::zipf_keys>& keys, std::mt19937_64& rng) {
  actors::dlrm_request r;
  r.batch = batch;
  r.dense.resize(std::size_t(batch) * d.dense_in);
  for (auto& x : r.dense) x = std::uniform_real_distribution<float>(0, 1)(rng);
  for (auto& z : keys) {
    nn::sparse_input s;
    for (int b = 0; b <= batch; ++b) s.offsets.push_back(b);
    for (int b = 0; b < batch; ++b) s.indices.push_back(std::int64_t(z.next()));
    r.sparse.push_back(std::move(s));
  }
  return r;
}

struct run_result {
  std::vector<double> latency_ms;
  double wall_s = 0, lookup_ms = 0, compute_ms = 0, hit_rate = 0;
  std::uint64_t errors = 0;
  std::string first_error;
};

// Closed loop: one client thread per instance, each with `batch`-sample requests.
run_result drive(caf::actor_system& sys, const std::vector<actors::dlrm_inference_actor>& instances,
                 const config::model_desc& d, const dlrm_args& a) {
  run_result res;
  std::mutex mu;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> clients;
  for (std::size_t c = 0; c < instances.size(); ++c) {
    clients.emplace_back([&, c] {
      std::mt19937_64 rng(a.seed + c);
      std::vector<hps::zipf_keys> keys;
      for (std::size_t t = 0; t < d.table_rows.size(); ++t)
        keys.emplace_back(std::uint64_t(d.table_rows[t]), 1.2, a.seed * 100 + t + 7 * c);
      caf::scoped_actor self{sys};
      for (std::size_t i = c; i < a.workload; i += instances.size()) {
        const auto req = make_request(d, a.batch, keys, rng);
        const auto b0 = std::chrono::steady_clock::now();
        self->request(instances[c], std::chrono::seconds(60), actors::dlrm_atom::value, req)
            .receive(
                [&](const actors::dlrm_reply& r) {
                  const double ms = std::chrono::duration<double, std::milli>(
                                        std::chrono::steady_clock::now() - b0)
                                        .count();
                  std::lock_guard lock(mu);
                  if (!r.error) {
                    if (res.errors++ == 0) res.first_error = r.error.to_string();
                    return;
                  }
                  res.latency_ms.push_back(ms);
                  res.lookup_ms += r.timing.lookup_ms;
                  res.compute_ms += r.timing.compute_ms;
                  for (const auto& t : r.timing.tables)
                    res.hit_rate += t.hit_rate / double(r.timing.tables.size());
                },
                [&](const caf::error&) {
                  std::lock_guard lock(mu);
                  ++res.errors;
                });
      }
    });
  }
  for (auto& t : clients) t.join();
  res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

void print_result(const run_result& r, const actors::hps_stats& st, const dlrm_args& a) {
  const double n = double(r.latency_ms.size());
  const double sps = n * a.batch / r.wall_s;
  if (a.json) {
    nlohmann::json j = {{"batches", a.workload},
                        {"answered", r.latency_ms.size()},
                        {"errors", r.errors},
                        {"batch", a.batch},
                        {"samples_per_s", sps},
                        {"batch_latency_ms",
                         {{"p50", pct(r.latency_ms, 0.5)},
                          {"p99", pct(r.latency_ms, 0.99)},
                          {"p999", pct(r.latency_ms, 0.999)}}},
                        {"mean_lookup_ms", n ? r.lookup_ms / n : 0},
                        {"mean_compute_ms", n ? r.compute_ms / n : 0},
                        {"mean_hit_rate", n ? r.hit_rate / n : 0}};
    for (std::size_t t = 0; t < st.tables.size(); ++t) {
      const auto& s = st.stats[t];
      j["tables"][st.tables[t]] = {{"lookups", s.lookups},
                                   {"sync", s.sync_lookups},
                                   {"async", s.async_lookups},
                                   {"defaulted", s.defaulted},
                                   {"vdb_errors", s.vdb_errors}};
    }
    fmt::print("{}\n", j.dump(2));
    return;
  }
  fmt::print("batches {} x {} samples, {} instances: {:.0f} samples/s, errors {}\n",
             r.latency_ms.size(), a.batch, a.instances, sps, r.errors);
  fmt::print(
      "batch latency p50 {:.2f} ms  p99 {:.2f} ms  p999 {:.2f} ms; mean lookup {:.2f} ms, compute "
      "{:.2f} ms; "
      "mean L1 hit rate {:.3f}\n",
      pct(r.latency_ms, 0.5), pct(r.latency_ms, 0.99), pct(r.latency_ms, 0.999),
      n ? r.lookup_ms / n : 0, n ? r.compute_ms / n : 0, n ? r.hit_rate / n : 0);
  for (std::size_t t = 0; t < st.tables.size(); ++t) {
    const auto& s = st.stats[t];
    fmt::print("  table {}: lookups {} (sync {}, async {}), default vectors {}, vdb errors {}\n",
               st.tables[t], s.lookups, s.sync_lookups, s.async_lookups, s.defaulted, s.vdb_errors);
  }
  if (r.errors) fmt::print("first error: {}\n", r.first_error);
}

status run_serve_dlrm(const dlrm_args& a) {
  if (a.model.empty() || a.pdb.empty())
    return make_error(errc::invalid_argument, "serve-dlrm: --model DIR and --pdb DIR are required");
  if (a.workload == 0)
    return make_error(errc::invalid_argument,
                      "serve-dlrm: --workload N is required (no RPC front door yet)");
  if (a.vdb != "hash_map" && a.vdb != "redis" && a.vdb != "none")
    return make_error(errc::invalid_argument, "--vdb '{}': expected hash_map, redis or none",
                      a.vdb);
  if (a.vdb == "redis" && a.vdb_redis.empty())
    return make_error(errc::invalid_argument, "--vdb redis needs --vdb-redis HOST:PORT");
  nn::heap_allocator weights;
  SPINDLE_ASSIGN_OR_RETURN(auto model,
                           nn::model::load(a.model, weights, /*external_embeddings=*/true));
  const auto& d = model.desc();
  if (d.arch != config::model_arch::dlrm)
    return make_error(errc::invalid_argument, "{}: not a DLRM model", a.model);
  SPINDLE_ASSIGN_OR_RETURN(auto hc, hps_settings(a));
  SPINDLE_ASSIGN_OR_RETURN(auto stack, open_stack(a, d, hc));
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  auto cache = actors::spawn_embedding_cache(sys, stack.session, hc.refresh_interval_ms);
  std::vector<actors::dlrm_inference_actor> instances;
  for (int i = 0; i < a.instances; ++i)
    instances.push_back(actors::spawn_dlrm_inference(sys, model, stack.session));
  SPINDLE_ASSIGN_OR_RETURN(auto updater, follow_updates(sys, a, d, stack));
  const run_result r = drive(sys, instances, d, a);
  caf::scoped_actor self{sys};
  actors::hps_stats st;
  self->request(cache, std::chrono::seconds(10), actors::hps_stats_atom::value)
      .receive([&](const actors::hps_stats& s) { st = s; }, [](const caf::error&) {});
  print_result(r, st, a);
  for (auto& i : instances) self->send_exit(i, caf::exit_reason::user_shutdown);
  self->send_exit(cache, caf::exit_reason::user_shutdown);
  stop_and_wait(sys, updater);
  return status::ok();
}

}  // namespace

void register_serve_dlrm(CLI::App& app, global_options&) {
  auto [cmd, a] =
      add_command<dlrm_args>(app, "serve-dlrm",
                             "Serve a DLRM with its tables in the hierarchical parameter server "
                             "and drive a synthetic workload through inference actors");
  add_hps_stack_options(*cmd, *a, "--model");
  cmd->get_option("--model")->required();
  cmd->get_option("--pdb")->required();
  cmd->add_option("--instances", a->instances, "DLRM inference actors (and client threads)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--batch", a->batch, "Samples per batch")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--workload", a->workload, "Batches to drive from the in-process generator")
      ->required();
  cmd->add_option("--seed", a->seed, "Generator seed")->capture_default_str();
  cmd->add_flag("--json", a->json, "Print the report as JSON");
  on_run(cmd, [a] { return run_serve_dlrm(*a); });
}

}  // namespace spindle::apps
