// Quiver §4.2.1 serving workload generator: batches of varying summed PSGS run
// through the small (inline) and large (pooled) sampling executors with the
// machine near full load (inline: one batch per core at a time; pooled: the
// pool on one batch), recording each batch's latency, then curves and the
// four crossover points. Also writes the gnuplot plot. Pure apart from timing.
#pragma once

#include <string>
#include <vector>

#include "core/progress.hpp"
#include "core/thread_pool.hpp"
#include "graph/dataset.hpp"
#include "sched/psgs_router.hpp"

namespace spindle::sched {

struct calibrate_options {
  std::vector<int> fanouts;  // empty: the dataset's metrics fanouts
  int buckets = 10;
  int batches = 300;             // per executor
  std::size_t max_seeds = 1024;  // largest batch: this many seeds' worth of PSGS
  std::uint64_t seed = 1;
};

/// Needs the dataset's PSGS (spindle prepare). `pool` sizes the load.
expected<psgs_calibration> calibrate(const graph::dataset& ds, const calibrate_options& options,
                                     thread_pool& pool, progress* progress_out = nullptr);

/// Writes a PNG of the four curves with the crossover points marked, using
/// gnuplot (Debian's gnuplot-nox); errors name the missing program or file.
status plot_calibration(const psgs_calibration& c, const std::string& png_path);

}  // namespace spindle::sched
