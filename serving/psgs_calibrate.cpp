#include "serving/psgs_calibrate.hpp"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include "core/gnuplot.hpp"
#include "core/log.hpp"
#include "core/subprocess.hpp"
#include "graph/metrics.hpp"
#include "graph/prepare.hpp"
#include "graph/sampler.hpp"
#include "serving/gnn_pipeline.hpp"

namespace spindle::serving {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct batch {
  std::vector<std::int64_t> seeds;
  double psgs = 0;
};

// Batches whose summed PSGS spreads log-uniformly from one seed to max_seeds'
// worth; seeds follow the dataset's p_0.
expected<std::vector<batch>> make_batches(const graph::dataset& ds, const calibrate_options& o) {
  SPINDLE_ASSIGN_OR_RETURN(auto p0, graph::request_seed_probabilities(
                                         ds.graph(), ds.metadata(),
                                         graph::recorded_metrics_request(ds.metadata())));
  std::discrete_distribution<std::int64_t> pick(p0.begin(), p0.end());
  std::mt19937_64 rng(o.seed);
  double mean_psgs = 0;
  for (double v : ds.psgs()) mean_psgs += v;
  mean_psgs /= double(ds.psgs().size());
  const double lo = std::max(1.0, mean_psgs), hi = mean_psgs * double(o.max_seeds);
  std::uniform_real_distribution<double> u(std::log(lo), std::log(hi));
  std::vector<batch> out(std::size_t(o.batches));
  for (auto& b : out) {
    const double target = std::exp(u(rng));
    while (b.psgs < target && b.seeds.size() < 4 * o.max_seeds) {
      b.seeds.push_back(pick(rng));
      b.psgs += ds.psgs()[std::size_t(b.seeds.back())];
    }
  }
  return out;
}

}  // namespace

namespace {

std::vector<gnn_request> as_requests(const batch& b) {
  std::vector<gnn_request> out(b.seeds.size());
  for (std::size_t i = 0; i < b.seeds.size(); ++i) out[i].seeds = {b.seeds[i]};
  return out;
}

// Times every batch on `choice`; `lanes` pipelines run side by side (one per
// pool slot for the small executor, one for the large).
std::vector<std::pair<double, double>> time_batches(const graph::dataset& ds,
                                                    const nn::model& model,
                                                    const std::vector<batch>& batches,
                                                    psgs_router::choice choice, thread_pool& pool,
                                                    const std::shared_ptr<batch_executor>& device,
                                                    const feature_source& features,
                                                    progress* progress_out) {
  psgs_router router(psgs_calibration{}, routing_policy::fixed);
  // Small: one pipeline per core, each on its own batch (the pool's slots, at
  // most one per core); large: the pool on one batch at a time.
  const std::size_t lanes =
      choice == psgs_router::choice::small ? std::min(pool.slots(), available_cores()) : 1;
  std::vector<std::unique_ptr<gnn_pipeline>> pipes;
  for (std::size_t i = 0; i < lanes; ++i)
    pipes.push_back(
        std::make_unique<gnn_pipeline>(ds, model, router, pool, features, device));
  std::vector<std::pair<double, double>> out(batches.size());
  auto run_range = [&](gnn_pipeline& p, std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; ++i) {
      auto reqs = as_requests(batches[std::size_t(i)]);
      const auto t0 = std::chrono::steady_clock::now();
      p.run(reqs, choice);
      out[std::size_t(i)] = {batches[std::size_t(i)].psgs, seconds_since(t0)};
      if (progress_out) progress_out->advance(1);
    }
  };
  for (auto& p : pipes) p->run(as_requests(batches.front()), choice);  // warm the arenas
  if (lanes == 1) {
    run_range(*pipes[0], 0, std::int64_t(batches.size()));
  } else {
    const auto n = std::int64_t(batches.size()),
               per = (n + std::int64_t(lanes) - 1) / std::int64_t(lanes);
    pool.parallel_for(0, std::int64_t(lanes), 1, [&](std::int64_t lane, std::int64_t, std::size_t) {
      run_range(*pipes[std::size_t(lane)], lane * per, std::min(n, (lane + 1) * per));
    });
  }
  return out;
}

status check_curve(const executor_curve& c, const calibrate_options& o) {
  if (c.buckets.size() >= 3) return status::ok();
  return make_error(errc::invalid_argument,
                    "calibration: only {} of {} PSGS buckets of the {} executor got batches; "
                    "raise --batches (now {}) or --max-seeds (now {})",
                    c.buckets.size(), o.buckets, c.executor, o.batches, o.max_seeds);
}

// Batches faster than this are timer and scheduler noise more than work.
constexpr double kTooFastS = 20e-6;

void warn_if_noise(const executor_curve& c) {
  double mean = 0;
  for (const auto& b : c.buckets) mean += b.mean_s / double(c.buckets.size());
  if (mean < kTooFastS || c.mean.b <= 0)
    log::warn(
        "calibration: {} batches take {:.1f} us on average (slope {:.3g} s per PSGS): "
        "timing noise dominates, so the crossover points are unreliable; calibrate with "
        "larger --max-seeds",
        c.executor, mean * 1e6, c.mean.b);
}

}  // namespace

expected<psgs_calibration> calibrate(const graph::dataset& ds, const nn::model& model,
                                     const calibrate_options& o, thread_pool& pool,
                                     progress* progress_out) {
  if (!ds.has_metrics())
    return make_error(errc::invalid_argument, "{}: no PSGS; run `spindle prepare {}` first",
                      ds.dir(), ds.dir());
  SPINDLE_TRY(served_fanouts(model.desc(), ds.metadata()).error_or_ok());
  if (o.batches < 1)
    return make_error(errc::invalid_argument, "calibration: --batches must be > 0");
  SPINDLE_ASSIGN_OR_RETURN(auto batches, make_batches(ds, o));
  // Page faults would time the first executor's batches, not its work.
  if (!o.features) ds.warm_features();
  auto small = time_batches(ds, model, batches, psgs_router::choice::small, pool, nullptr,
                            o.features, progress_out);
  auto large = time_batches(ds, model, batches, psgs_router::choice::large, pool, o.device,
                            o.features, progress_out);
  psgs_calibration c;
  c.small = build_curve("inline", std::move(small), o.buckets);
  c.large = build_curve(
      o.device ? std::string(o.device->name()) : fmt::format("pooled({})", pool.slots()),
      std::move(large), o.buckets);
  SPINDLE_TRY(check_curve(c.small, o));
  SPINDLE_TRY(check_curve(c.large, o));
  warn_if_noise(c.small);
  warn_if_noise(c.large);
  compute_crossovers(c);
  return c;
}

expected<nn::model> default_calibration_model(const graph::dataset& ds, nn::allocator& weights) {
  config::model_desc d;
  d.name = "calibration-sage";
  d.arch = config::model_arch::graphsage;
  d.layers = std::max<int>(1, int(ds.metadata().fanouts.size()));
  d.in = int(ds.feature_dim()), d.hidden = 256, d.out = 47;
  const auto dir = std::filesystem::temp_directory_path() /
                   fmt::format("spindle-calibration-model-{}", ::getpid());
  SPINDLE_TRY(nn::init_model(d, 1, dir.string()));
  auto m = nn::model::load(dir.string(), weights);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return m;
}

status plot_calibration(const psgs_calibration& c, const std::string& png_path,
                        const std::string& dataset) {
  const std::string base = png_path + ".tmp";
  for (const auto* curve : {&c.small, &c.large}) {
    std::ofstream dat(base + (curve == &c.small ? ".small.dat" : ".large.dat"));
    for (const auto& b : curve->buckets)
      dat << b.psgs_mean << ' ' << b.mean_s * 1e3 << ' ' << b.max_s * 1e3 << '\n';
  }
  // Log y: one slow batch (a max) must not flatten the mean curves.
  std::string gp =
      "set terminal png size 1000,650\nset output out\nset logscale xy\n"
      "set xlabel 'summed PSGS of the batch'\n"
      "set ylabel 'batch latency (sample+gather+forward) (ms)'\nset key left top\nset grid\n"
      "set title title\n";
  int n = 1;
  for (auto [name, p] : {std::pair{"CPU-preferred", c.cpu_preferred},
                         {"GPU-preferred", c.gpu_preferred},
                         {"latency-preferred", c.latency_preferred},
                         {"throughput-preferred", c.throughput_preferred}})
    if (p.exists) {
      gp += fmt::format(
          "set arrow {} from {}, graph 0 to {}, graph 1 nohead dt 2\n"
          "set label {} '{} ({:.0f})' at {}, graph {} font ',9'\n",
          n, p.psgs, p.psgs, n, name, p.psgs, p.psgs, 0.95 - 0.05 * n);
      ++n;
    }
  gp +=
      "plot small u 1:2 w lp t small_name.' mean', small u 1:3 w lp t small_name.' max', "
      "large u 1:2 w lp t large_name.' mean', large u 1:3 w lp t large_name.' max'\n";
  const status st = run_gnuplot(
      gp, png_path,
      {{"small", base + ".small.dat"},
       {"large", base + ".large.dat"},
       {"small_name", c.small.executor},
       {"large_name", c.large.executor},
       {"title", fmt::format("PSGS calibration of {}: {} vs {} executor, crossover points marked",
                             dataset.empty() ? std::string("the dataset") : dataset,
                             c.small.executor, c.large.executor)}});
  std::error_code ec;
  for (const char* ext : {".small.dat", ".large.dat"}) std::filesystem::remove(base + ext, ec);
  return st;
}

}  // namespace spindle::serving
