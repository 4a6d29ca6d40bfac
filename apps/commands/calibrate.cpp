// `spindle calibrate`: Quiver §4.2.1 PSGS calibration of the served pipeline
// (joint sample + gather + forward pass) on the inline and pooled executors;
// writes the calibration file, a text table and a PNG plot.
#include <fstream>

#include "apps/commands/command.hpp"
#include "apps/commands/runtime_flags.hpp"
#include "core/progress.hpp"
#include "gpu/device.hpp"
#include "serving/cuda_executor.hpp"
#include "serving/psgs_calibrate.hpp"

namespace spindle::apps {
namespace {

struct calibrate_args {
  std::string dir, out = "psgs-calibration.json", plot = "psgs-calibration.png", model;
  int buckets = 10, batches = 300;
  std::size_t max_seeds = 1024;
  std::string device = "auto";
  std::size_t device_feature_mb = 1024;
};

status run_calibrate(const calibrate_args& a, global_options& g) {
  SPINDLE_ASSIGN_OR_RETURN(auto ds, graph::dataset::open(a.dir));
  serving::calibrate_options o;
  o.buckets = a.buckets, o.batches = a.batches, o.max_seeds = a.max_seeds;
  SPINDLE_ASSIGN_OR_RETURN(const auto device, gpu::resolve_device(a.device));
  SPINDLE_ASSIGN_OR_RETURN(o.device,
                           serving::make_large_executor(ds, device, a.device_feature_mb << 20));
  nn::heap_allocator weights;
  SPINDLE_ASSIGN_OR_RETURN(auto m, a.model.empty() ? serving::default_calibration_model(ds, weights)
                                                   : nn::model::load(a.model, weights));
  if (m.desc().in != ds.feature_dim())
    return make_error(errc::invalid_argument, "{}: model.in = {} but {} has {} features per node",
                      a.model, m.desc().in, a.dir, ds.feature_dim());
  progress bar("calibrating", std::uint64_t(2 * a.batches), "batches");
  SPINDLE_ASSIGN_OR_RETURN(auto c, serving::calibrate(ds, m, o, g.pool(), &bar));
  bar.finish();
  std::ofstream out(a.out);
  out << c.to_json() << '\n';
  if (!out) return make_error(errc::io_error, "{}: cannot write the calibration", a.out);
  fmt::print("{}", c.table());
  fmt::print("calibration written to {}\n", a.out);
  if (!a.plot.empty()) {
    SPINDLE_TRY(serving::plot_calibration(c, a.plot, ds.metadata().name));
    fmt::print("plot written to {}\n", a.plot);
  }
  return status::ok();
}

}  // namespace

void register_calibrate(CLI::App& app, global_options& g) {
  auto [cmd, a] = add_command<calibrate_args>(
      app, "calibrate",
      "Measure the served pipeline's batch latency (sample + gather + forward) "
      "against summed PSGS on the inline and pooled executors near full load "
      "and derive Quiver's four routing points");
  cmd->add_option("dataset", a->dir, "Prepared dataset directory (with PSGS)")->required();
  cmd->add_option("--out", a->out, "Calibration file to write")->capture_default_str();
  cmd->add_option("--plot", a->plot, "PNG plot to write (gnuplot); empty for none")
      ->capture_default_str();
  cmd->add_option("--model", a->model,
                  "Model directory to time (default: a 2-layer GraphSAGE, 256 hidden, 47 out)");
  cmd->add_option("--buckets", a->buckets, "PSGS buckets")->capture_default_str();
  cmd->add_option("--batches", a->batches, "Batches per executor")->capture_default_str();
  cmd->add_option("--max-seeds", a->max_seeds, "Largest batch, in seeds' worth of PSGS")
      ->capture_default_str();
  add_device_options(*cmd, a->device, a->device_feature_mb);
  on_run(cmd, [a, &g] { return run_calibrate(*a, g); });
}

}  // namespace spindle::apps
