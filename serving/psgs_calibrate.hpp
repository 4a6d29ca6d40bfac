// Quiver §4.2.1 serving workload generator: batches of varying summed PSGS run
// through the whole served pipeline (joint sample + gather + forward pass of
// the served model) on the small and the large executor with the machine near
// full load (small: one pipeline per core, each on its own batch; large: the
// pool on one batch at a time), recording each batch's latency, then curves
// and the four crossover points. Refuses to fit curves from too few buckets and
// warns when batches are too fast to time. Also writes the gnuplot plot.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/progress.hpp"
#include "core/thread_pool.hpp"
#include "graph/dataset.hpp"
#include "nn/model.hpp"
#include "serving/batch_executor.hpp"
#include "serving/gnn_pipeline.hpp"
#include "serving/psgs_router.hpp"

namespace spindle::serving {

struct calibrate_options {
  int buckets = 10;
  int batches = 300;             // per executor
  std::size_t max_seeds = 1024;  // largest batch: this many seeds' worth of PSGS
  std::uint64_t seed = 1;
  /// The large executor to calibrate instead of the pool (a GPU's: PSGS then
  /// picks between the host's small executor and the device, as in Quiver).
  std::shared_ptr<batch_executor> device;
  /// Where gathers read feature rows (a cluster node's shards, its own and the
  /// other ranks'); empty: the dataset's own matrix, as a single process serves.
  feature_source features;
};

/// Times `model` served over `ds` (which needs its PSGS: spindle prepare); the
/// sampler's fanouts are the ones the pipeline serves. `pool` is the large
/// executor and sizes the load. Fails (naming the counts and the knob to turn)
/// when fewer than 3 PSGS buckets got batches on either executor.
expected<psgs_calibration> calibrate(const graph::dataset& ds, const nn::model& model,
                                     const calibrate_options& options, thread_pool& pool,
                                     progress* progress_out = nullptr);

/// The model `spindle calibrate` times when none is given: a 2-layer GraphSAGE
/// (in = the dataset's feature width, 256 hidden, 47 out), fixed random weights.
expected<nn::model> default_calibration_model(const graph::dataset& ds, nn::allocator& weights);

/// Writes a PNG of the four curves with the crossover points marked, using
/// gnuplot (Debian's gnuplot-nox); errors name the missing program or file.
status plot_calibration(const psgs_calibration& c, const std::string& png_path,
                        const std::string& dataset = {});

}  // namespace spindle::serving
