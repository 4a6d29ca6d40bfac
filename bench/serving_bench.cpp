// The actor tax: the same GraphSAGE pipeline served through the CAF
// batcher and a pipeline actor, against the same pipeline called directly in one
// thread with no actors (the same-run baseline), at equal batch sizes.
//
// usage: serving_bench [REQUESTS=4000]
#include <fmt/format.h>

#include <filesystem>
#include <random>

#include "actors/batcher_actor.hpp"
#include "actors/load_client.hpp"
#include "actors/pipeline_actor.hpp"
#include "actors/scheduler_config.hpp"
#include "bench/bench_util.hpp"
#include "core/progress.hpp"
#include "graph/metrics.hpp"
#include "graph/prepare.hpp"

using namespace spindle;

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::size_t(std::atol(argv[1])) : 4000;
  set_progress_enabled(false);
  nn::set_blas_threads(1);
  thread_pool pool(1, "bench");
  const std::string dir =
      (std::filesystem::temp_directory_path() / "spindle-serving-bench").string();
  if (!graph::dataset::open(dir + "/data")) {
    graph::generate_options o;
    o.rmat.scale = 16;
    o.feature_dim = 64;
    if (auto st = graph::generate_dataset(o, dir + "/data", pool); !st)
      return fmt::print(stderr, "{}\n", st.to_string()), 1;
  }
  auto ds = graph::dataset::open(dir + "/data");
  config::model_desc d;
  d.arch = config::model_arch::graphsage;
  d.in = 64, d.hidden = 128, d.out = 16;
  if (auto st = nn::init_model(d, 1, dir + "/model"); !st)
    return fmt::print(stderr, "{}\n", st.to_string()), 1;
  nn::heap_allocator weights;
  auto model = nn::model::load(dir + "/model", weights);
  serving::psgs_calibration c;  // route everything inline: the tax is what is measured
  c.small.mean = c.small.max = {0, 0};
  c.large.mean = c.large.max = {1, 0};
  serving::compute_crossovers(c);
  auto router = std::make_shared<serving::psgs_router>(c);
  auto p0 = graph::seed_probabilities(ds->graph(), config::parse_seed_distribution("degree"));
  std::discrete_distribution<std::int64_t> pick(p0->begin(), p0->end());
  std::mt19937_64 rng(1);
  std::vector<serving::gnn_request> requests(n);
  for (std::size_t i = 0; i < n; ++i) requests[i] = {{pick(rng)}, i};

  fmt::print("GraphSAGE 64-128-16 on R-MAT scale 16, [25,10], {} requests of 1 seed\n", n);
  fmt::print("{:>6} | {:>14} {:>14} | {:>8}\n", "batch", "direct req/s", "actors req/s", "tax");
  for (std::size_t batch : {1, 8, 32}) {
    serving::gnn_pipeline direct(*ds, *model, *router, pool);
    auto t0 = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < n; i += batch) {
      std::vector<serving::gnn_request> b(requests.begin() + i,
                                        requests.begin() + std::min(n, i + batch));
      auto r = direct.run(b);
    }
    const double direct_rps = double(n) / bench::seconds_since(t0);

    caf::actor_system_config cfg;
    actors::configure_scheduler(cfg);
    caf::actor_system sys{cfg};
    auto pipe = actors::spawn_pipeline(sys, *ds, *model, *router, pool);
    serving::batch_policy bp;
    bp.max_batch = batch;
    bp.deadline = std::chrono::milliseconds(100);  // batches close on size
    const auto* dsp = &*ds;
    auto batcher = actors::spawn_batcher(
        sys, {pipe}, bp, router,
        [dsp](const serving::gnn_request& r) { return serving::summed_psgs(*dsp, r); });
    auto result = std::make_shared<actors::load_result>();
    caf::scoped_actor self{sys};
    actors::spawn_load_client(sys, batcher, {requests, 0, int(batch)}, result, self);
    self->receive([](actors::done_atom) {});
    const double actor_rps = double(result->latency_s.size()) / result->wall_s;
    fmt::print("{:>6} | {:>14.0f} {:>14.0f} | {:>7.1f}%\n", batch, direct_rps, actor_rps,
               100 * (1 - actor_rps / direct_rps));
    self->send_exit(batcher, caf::exit_reason::user_shutdown);
    self->send_exit(pipe, caf::exit_reason::user_shutdown);
  }
  return 0;
}
