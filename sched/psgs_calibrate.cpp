#include "sched/psgs_calibrate.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include "core/subprocess.hpp"
#include "graph/metrics.hpp"
#include "graph/sampler.hpp"

namespace spindle::sched {
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
  auto dist = config::parse_seed_distribution(
      ds.metadata().seed_distribution.empty() ? "uniform" : ds.metadata().seed_distribution);
  SPINDLE_ASSIGN_OR_RETURN(auto p0, graph::seed_probabilities(ds.graph(), dist));
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

expected<psgs_calibration> calibrate(const graph::dataset& ds, const calibrate_options& options,
                                     thread_pool& pool, progress* progress_out) {
  if (!ds.has_metrics())
    return make_error(errc::invalid_argument, "{}: no PSGS; run `spindle prepare {}` first",
                      ds.dir(), ds.dir());
  calibrate_options o = options;
  if (o.fanouts.empty()) o.fanouts = ds.metadata().fanouts;
  SPINDLE_ASSIGN_OR_RETURN(auto batches, make_batches(ds, o));
  std::vector<std::pair<double, double>> small(batches.size()), large;
  // Small executor at full load: every pool slot samples its own batch.
  pool.parallel_for(0, std::int64_t(batches.size()), 1,
                    [&](std::int64_t lo, std::int64_t hi, std::size_t) {
                      graph::inline_executor ex;
                      for (std::int64_t i = lo; i < hi; ++i) {
                        auto t0 = std::chrono::steady_clock::now();
                        auto sub = ex.sample(ds.graph(), batches[i].seeds,
                                             {o.fanouts, false, o.seed + std::uint64_t(i)});
                        small[std::size_t(i)] = {batches[i].psgs, seconds_since(t0)};
                        if (progress_out && sub) progress_out->advance(1);
                      }
                    });
  // Large executor: the pool works on one batch at a time.
  graph::pooled_executor pooled(pool);
  for (std::size_t i = 0; i < batches.size(); ++i) {
    auto t0 = std::chrono::steady_clock::now();
    SPINDLE_ASSIGN_OR_RETURN(
        auto sub, pooled.sample(ds.graph(), batches[i].seeds, {o.fanouts, false, o.seed + i}));
    large.push_back({batches[i].psgs, seconds_since(t0)});
    if (progress_out) progress_out->advance(1);
  }
  psgs_calibration c;
  c.small = build_curve("inline", std::move(small), o.buckets);
  c.large = build_curve(fmt::format("pooled({})", pool.slots()), std::move(large), o.buckets);
  compute_crossovers(c);
  return c;
}

status plot_calibration(const psgs_calibration& c, const std::string& png_path) {
  std::string gnuplot;
  for (const char* dir : {"/usr/bin/gnuplot", "/usr/local/bin/gnuplot"})
    if (std::filesystem::exists(dir)) gnuplot = dir;
  if (gnuplot.empty())
    return make_error(errc::not_found, "gnuplot not found (apt-get install gnuplot-nox) for {}",
                      png_path);
  const std::string base = png_path + ".tmp";
  for (const auto* curve : {&c.small, &c.large}) {
    std::ofstream dat(base + (curve == &c.small ? ".small.dat" : ".large.dat"));
    for (const auto& b : curve->buckets)
      dat << b.psgs_mean << ' ' << b.mean_s * 1e3 << ' ' << b.max_s * 1e3 << '\n';
  }
  std::ofstream gp(base + ".gp");
  gp << "set terminal png size 1000,650\nset output '" << png_path << "'\n"
     << "set logscale x\nset xlabel 'summed PSGS of the batch'\nset ylabel 'sampling latency "
        "(ms)'\n"
     << "set key left top\nset title 'PSGS calibration: " << c.small.executor << " vs "
     << c.large.executor << "'\n";
  int n = 1;
  for (auto [name, p] : {std::pair{"CPU-preferred", c.cpu_preferred},
                         {"GPU-preferred", c.gpu_preferred},
                         {"latency-preferred", c.latency_preferred},
                         {"throughput-preferred", c.throughput_preferred}})
    if (p.exists) {
      gp << "set arrow " << n << " from " << p.psgs << ", graph 0 to " << p.psgs
         << ", graph 1 nohead dt 2\nset label " << n << " '" << name << "' at " << p.psgs
         << ", graph " << 0.95 - 0.05 * n << " font ',9'\n";
      ++n;
    }
  gp << "plot '" << base << ".small.dat' u 1:2 w lp t '" << c.small.executor << " mean', '" << base
     << ".small.dat' u 1:3 w lp t '" << c.small.executor << " max', '" << base
     << ".large.dat' u 1:2 w lp t '" << c.large.executor << " mean', '" << base
     << ".large.dat' u 1:3 w lp t '" << c.large.executor << " max'\n";
  gp.close();
  SPINDLE_ASSIGN_OR_RETURN(auto proc, child_process::spawn({gnuplot, base + ".gp"}));
  int rc = proc.wait();
  for (const char* ext : {".small.dat", ".large.dat", ".gp"}) std::filesystem::remove(base + ext);
  if (rc != 0 || !std::filesystem::exists(png_path))
    return make_error(errc::io_error, "gnuplot failed (exit {}) writing {}", rc, png_path);
  return status::ok();
}

}  // namespace spindle::sched
