#include "apps/commands/client_load.hpp"

#include "apps/commands/command.hpp"
#include "client/gnn_load.hpp"
#include "client/load_runs.hpp"
#include "client/rec_load.hpp"

namespace spindle::apps {
namespace {

namespace rpc = transport::rpc;

struct load_args {
  std::size_t requests = 1000, warmup = 100;
  int clients = 8;
  unsigned poll_us = 0;  // --poll-us: a lone closed loop polls for its answers
  double rate = 0;
  std::string seeds = "", csv, plot, log;
  std::string concurrency_range, rate_range;  // sweep mode (load_sweep.hpp)
  std::uint64_t seed = 1;
  std::uint32_t deadline_us = 0;
  bool json = false;
  bool reproducible = false;     // request i carries sampler seed i + 1
  client::rec_load_options rec;  // recommendation models: the batches sent
  std::string door = "capnp";    // or a KServe door: http, grpc (door_load.hpp)
  std::string node_type;         // typed graphs: the seeds' node type

  client::load_settings settings() const { return {requests, warmup, clients, rate, seed}; }
};

status print_report(const client_args& c, const load_args& a,
                    const expected<client::load_outcome>& o) {
  if (!o) return o.error();
  return client::print_load_report(*o, {c.model, a.rate, a.clients, a.json, a.csv, a.plot, a.log});
}

// --node-type numbers seeds within the type: a dataset's degrees (graph ids) are not.
status typed_seed_spec(const load_args& a) {
  if (!a.node_type.empty() && a.seeds.starts_with("degree:"))
    return make_error(errc::invalid_argument,
                      "--seeds {} draws the graph's node ids; with --node-type give uniform:N "
                      "(N: the type's count) or a trace file of ids within the type",
                      a.seeds);
  return status::ok();
}

bool sweeping(const load_args& a) { return !a.concurrency_range.empty() || !a.rate_range.empty(); }

// --concurrency-range / --rate-range: every level through `run`, then the table and plot.
status sweep(const load_args& a, const client::window_runner& run, std::size_t calls_per_window) {
  return client::sweep_levels(run, calls_per_window, a.concurrency_range, a.rate_range, a.seed,
                              a.json, a.plot);
}

// A recommendation model's batches: from its description (or a file), each
// with the run's deadline.
expected<std::vector<rpc::rec_call>> rec_calls(const load_args& a, const rpc::model_info& m) {
  auto o = a.rec;
  o.seed = a.seed;
  SPINDLE_ASSIGN_OR_RETURN(auto calls, client::rec_load_calls(m, m.name, o));
  for (auto& x : calls) x.deadline_us = a.deadline_us;
  return calls;
}

// A recommendation model under load: its batches sent in turn, closed or open
// loop (or swept level by level), on one door.
status run_rec_load(const client_args& c, const load_args& a, rpc::rpc_client& client,
                    const rpc::model_info& m) {
  if (endpoints_of(c).size() > 1)
    return make_error(errc::invalid_argument,
                      "load: recommendation model '{}': one door per run (several doors drive "
                      "GNN models)",
                      m.name);
  SPINDLE_ASSIGN_OR_RETURN(auto calls, rec_calls(a, m));
  SPINDLE_TRY(client::warm_up_rec(client, calls, a.settings()));
  if (sweeping(a)) return sweep(a, client::rec_runner(client, calls, a.settings()), a.requests);
  return print_report(c, a, client::measure_rec(client, calls, a.settings()));
}

// Warm-up, then the measured calls (or a sweep), on a KServe door.
status drive_door(const client_args& c, const load_args& a, const client::door_connect& connect,
                  std::uint32_t samples, const client::door_infer& infer) {
  SPINDLE_TRY(client::warm_up_door(connect, a.settings(), infer));
  if (sweeping(a)) return sweep(a, client::door_runner(connect, a.settings(), infer), a.requests);
  return print_report(c, a, client::measure_door(connect, a.settings(), infer, samples));
}

status need_seeds(const load_args& a, const std::string& suffix) {
  if (!a.seeds.empty()) return status::ok();
  return make_error(errc::invalid_argument,
                    "load: --seeds uniform:N | degree:DIR | FILE is required for a GNN model{}",
                    suffix);
}

// `client load --door http|grpc`: either model kind, described by the door's
// model configuration; one door and one level per run.
status run_kserve_load(const client_args& c, const load_args& a) {
  if (endpoints_of(c).size() > 1)
    return make_error(errc::invalid_argument,
                      "load --door {}: one door per run (several doors: the Cap'n Proto door)",
                      a.door);
  if (c.model.empty())
    return make_error(errc::invalid_argument, "load --door {}: give --model NAME", a.door);
  SPINDLE_ASSIGN_OR_RETURN(auto connect, client::door_connector(a.door, c.connect, c.timeout_ms));
  SPINDLE_ASSIGN_OR_RETURN(auto probe, connect());
  SPINDLE_ASSIGN_OR_RETURN(auto m, probe->describe(c.model));
  if (m.kind != "gnn") {
    SPINDLE_ASSIGN_OR_RETURN(auto calls, rec_calls(a, m));
    return drive_door(c, a, connect, calls.front().batch, [&](auto& client, std::size_t i) {
      auto x = client.infer_rec(calls[i % calls.size()]);
      return client::call_outcome{x.status, std::move(x.message)};
    });
  }
  SPINDLE_TRY(need_seeds(a, fmt::format(" ('{}')", m.name)));
  SPINDLE_TRY(typed_seed_spec(a));
  SPINDLE_ASSIGN_OR_RETURN(auto seeds, client::draw_seeds(a.seeds, a.requests + a.warmup, a.seed));
  auto calls = client::gnn_load_calls(c.model, seeds, a.reproducible, a.deadline_us);
  for (auto& call : calls) call.node_type = a.node_type;
  return drive_door(c, a, connect, 0, [&](auto& client, std::size_t i) {
    auto x = client.infer_gnn(calls[i]);
    return client::call_outcome{x.status, std::move(x.message)};
  });
}

// --poll-us: one call in flight on one Cap'n Proto door, or a refusal naming what is not.
status poll_allowed(const client_args& c, const load_args& a) {
  if (a.poll_us == 0) return status::ok();
  std::string why;
  const char* crowd = "with more calls in flight, polling would take a core from the server";
  if (a.clients != 1)
    why = fmt::format("--clients {} ({})", a.clients, crowd);
  else if (a.rate > 0)
    why = fmt::format("--rate (an open loop: {})", crowd);
  else if (sweeping(a))
    why = fmt::format("a sweep (its levels: {})", crowd);
  else if (endpoints_of(c).size() > 1)
    why = "several --connect doors (one door's connection is polled)";
  else if (a.door != "capnp")
    why = fmt::format("--door {} (only the Cap'n Proto client polls)", a.door);
  if (why.empty()) return status::ok();
  return make_error(
      errc::invalid_argument,
      "load: --poll-us is for one call in flight on one Cap'n Proto door, not with {}", why);
}

status run_load(const client_args& c, const load_args& a) {
  SPINDLE_TRY(poll_allowed(c, a));
  if (a.door != "capnp") return run_kserve_load(c, a);
  const bool several = endpoints_of(c).size() > 1;
  SPINDLE_ASSIGN_OR_RETURN(auto client, open_door(c));
  client->poll_answers(a.poll_us);
  if (a.seeds.empty()) {  // a recommendation model needs none: its description says what to send
    SPINDLE_ASSIGN_OR_RETURN(auto models, client->models());
    const rpc::model_info* m = nullptr;
    for (const auto& x : models)
      if (x.name == c.model || (c.model.empty() && models.size() == 1)) m = &x;
    if (m && m->kind != "gnn") return run_rec_load(c, a, *client, *m);
    return need_seeds(a, m ? fmt::format(" ('{}')", m->name) : std::string());
  }
  if (several && sweeping(a))
    return make_error(errc::invalid_argument,
                      "load: a sweep drives one door; give one --connect HOST:PORT");
  SPINDLE_TRY(typed_seed_spec(a));
  SPINDLE_ASSIGN_OR_RETURN(auto seeds, client::draw_seeds(a.seeds, a.requests + a.warmup, a.seed));
  auto calls = client::gnn_load_calls(c.model, seeds, a.reproducible, a.deadline_us);
  for (auto& call : calls) call.node_type = a.node_type;
  std::vector<rpc::gnn_call> warm(calls.begin(), calls.begin() + a.warmup),
      measured(calls.begin() + a.warmup, calls.end());
  const client::door_list doors{endpoints_of(c), c.connect, c.timeout_ms};
  const auto* spread = several ? &doors : nullptr;
  SPINDLE_TRY(client::warm_up_gnn(*client, spread, warm, a.settings()));
  if (sweeping(a)) return sweep(a, client::capnp_gnn_runner(*client, measured), measured.size());
  return print_report(c, a, client::measure_gnn(*client, spread, measured, a.settings()));
}

}  // namespace

void add_load_command(CLI::App& client, std::shared_ptr<client_args> c) {
  auto [load, la] = add_command<load_args>(client, "load", "Load generator with a latency report");
  load->add_option("--requests", la->requests, "Measured requests")->capture_default_str();
  load->add_option("--warmup", la->warmup, "Requests before measuring")->capture_default_str();
  load->add_option("--clients", la->clients, "Closed loop: calls in flight")->capture_default_str();
  load->add_option("--door", la->door,
                   "capnp (default), or a KServe door: http (binary tensors) | grpc; --connect "
                   "then names that door, and --clients is the connection pool (one call in "
                   "flight per connection, open loop too)")
      ->check(CLI::IsMember({"capnp", "http", "grpc"}))
      ->capture_default_str();
  add_bounded(*load, "--poll-us", la->poll_us,
              "Only with --clients 1 on one Cap'n Proto door (refused otherwise): after each "
              "answer, poll the connection for up to N microseconds before sleeping, as the "
              "door does for a lone client, so an idle server's latency is measured without "
              "the client's own wake-up (0: sleep at once)",
              0u, 10'000u);
  load->add_option("--rate", la->rate,
                   "Open loop: Poisson arrivals per second (overrides --clients)");
  load->add_option("--seeds", la->seeds,
                   "GNN models: uniform:N | degree:DATASET_DIR | trace FILE (a recommendation "
                   "model needs none: its batches are drawn from its description)");
  add_bounded(*load, "--batch", la->rec.batch, "Recommendation models: samples per call", 1,
              1 << 20);
  add_bounded(*load, "--zipf", la->rec.zipf,
              "Recommendation models: skew of each table's keys (P(k) ~ 1/(k+1)^s; 0: uniform)",
              0.0, 10.0);
  add_bounded(*load, "--lookups", la->rec.lookups,
              "Recommendation models: keys per sample per table", 1, 4096);
  add_bounded(*load, "--distinct-batches", la->rec.distinct,
              "Recommendation models: batches drawn, then sent in turn (more: fresher keys)", 1,
              1 << 20);
  load->add_option("--input", la->rec.input,
                   "Recommendation models: send this JSON batch (`client rec --input`'s form) "
                   "instead of drawn ones");
  load->add_option("--seed", la->seed, "Random seed")->capture_default_str();
  load->add_option("--deadline-us", la->deadline_us, "Per-request deadline (0: none)")
      ->capture_default_str();
  load->add_option("--csv", la->csv, "Write the latency CDF as CSV");
  load->add_option("--plot", la->plot,
                   "Write the latency CDF as a PNG (gnuplot); in a sweep, p99 against throughput");
  load->add_option("--concurrency-range", la->concurrency_range,
                   "Sweep closed-loop levels START:END:STEP calls in flight, each measured in "
                   "windows of --requests until two agree within 10% (at most 4)");
  load->add_option("--rate-range", la->rate_range,
                   "Sweep open-loop Poisson rates START:END:STEP per second, as above");
  load->add_option("--log", la->log,
                   "Write every measured request as CSV: index, sent_s (scheduled), latency_ms, "
                   "status (to see when slow or refused answers happened)");
  load->add_flag("--json", la->json, "Print the report as JSON");
  load->add_option("--node-type", la->node_type,
                   "A typed graph's node type of the seeds (--seeds uniform:N over its N nodes)");
  load->add_flag("--reproducible", la->reproducible,
                 "Give request i sampler seed i + 1 (sampled on its own, fixed answer); by "
                 "default requests carry none and share their batch's sampled graph");
  on_run(load, [c, la] { return run_load(*c, *la); });
}

}  // namespace spindle::apps
