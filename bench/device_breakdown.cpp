// Where a GNN batch's time goes on an executor, and how the throughput of
// pipelines sharing it grows with their number: the profile behind the GPU
// figures (GraphSAGE 128-256-47, [25,10], single seeds drawn by out-degree).
//   1. One pipeline, batches of 1-1,024 back to back: seeds/s, batch p50/p99
//      and the mean time per batch of sampling, gather and the forward pass.
//   2. Batches of 64 (and 256) on 1..N pipelines, each on its own thread with
//      its own executor (as `spindle serve --pipelines N` runs them): seeds/s
//      and the stages' mean time per batch. A stage whose time grows with the
//      pipelines while the machine has idle cores waits for the others.
// --device cuda runs every batch on a GPU executor (PSGS's large executor,
// `serving::cuda_executor`); --device host on the host executor (the small one).
//   usage: device_breakdown DATASET_DIR [--device host|cuda] [--threads 1,2,4,8]
//                           [--batches 40]
#include <fmt/format.h>

#include <filesystem>
#include <random>
#include <thread>

#include "bench/bench_util.hpp"
#include "core/blas_kernels.hpp"
#include "core/progress.hpp"
#include "graph/metrics.hpp"
#include "nn/ops.hpp"
#include "serving/cuda_executor.hpp"
#include "serving/gnn_pipeline.hpp"

using namespace spindle;

namespace {

struct options {
  std::string dataset;
  gpu::device_kind device = gpu::device_kind::host;
  std::vector<int> threads{1, 2, 4, 8};
  int batches = 40;
};

struct run_row {
  double seeds_per_s = 0, p50_ms = 0, p99_ms = 0;  // seeds answered, not failed
  serving::stage_times per_batch;  // mean seconds per batch
  std::uint64_t failed = 0;        // requests answered with an error
  std::string first_error;
};

std::vector<std::int64_t> draw_seeds(const graph::dataset& ds, std::size_t n, std::uint64_t seed) {
  auto p0 = graph::seed_probabilities(ds.graph(), config::parse_seed_distribution("degree"));
  std::discrete_distribution<std::int64_t> pick(p0->begin(), p0->end());
  std::mt19937_64 rng(seed);
  std::vector<std::int64_t> out(n);
  for (auto& s : out) s = pick(rng);
  return out;
}

// `threads` pipelines, each running `batches` batches of `batch` seeds on its
// own thread; two warm-up batches each first.
run_row run(std::vector<std::unique_ptr<serving::gnn_pipeline>>& pipes, const graph::dataset& ds,
            std::size_t batch, int batches, serving::psgs_router::choice where) {
  const std::size_t threads = pipes.size();
  std::vector<std::vector<double>> lat(threads);
  std::vector<serving::stage_times> times(threads);
  std::vector<std::uint64_t> answered(threads), failed(threads);
  std::vector<std::string> first_error(threads);
  std::vector<std::thread> ts;
  std::atomic<int> warm{0};
  std::chrono::steady_clock::time_point t0;
  for (std::size_t t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      auto seeds = draw_seeds(ds, batch * std::size_t(batches + 2), 7 + t + 100 * batch);
      auto slice = [&](int b) {
        std::vector<serving::gnn_request> reqs(batch);
        for (std::size_t i = 0; i < batch; ++i) reqs[i] = {{seeds[std::size_t(b) * batch + i]}, 0};
        return reqs;
      };
      for (int b = 0; b < 2; ++b) pipes[t]->run(slice(b), where);
      if (++warm == int(threads)) t0 = std::chrono::steady_clock::now();
      while (warm < int(threads)) std::this_thread::yield();
      for (int b = 2; b < batches + 2; ++b) {
        auto reqs = slice(b);
        const auto s = std::chrono::steady_clock::now();
        auto res = pipes[t]->run(reqs, where);
        lat[t].push_back(bench::seconds_since(s) * 1e3);
        times[t].sample_s += res.times.sample_s, times[t].gather_s += res.times.gather_s;
        times[t].compute_s += res.times.compute_s;
        for (const auto& e : res.errors) {
          if (e.is_ok()) {
            ++answered[t];
          } else if (failed[t]++ == 0) {
            first_error[t] = e.to_string();
          }
        }
      }
    });
  for (auto& th : ts) th.join();
  const double wall = bench::seconds_since(t0);
  run_row r;
  std::vector<double> all;
  std::uint64_t ok_seeds = 0;
  for (std::size_t t = 0; t < threads; ++t) {
    ok_seeds += answered[t];  // one seed per request
    r.failed += failed[t];
    if (r.first_error.empty()) r.first_error = first_error[t];
    all.insert(all.end(), lat[t].begin(), lat[t].end());
    r.per_batch.sample_s += times[t].sample_s, r.per_batch.gather_s += times[t].gather_s;
    r.per_batch.compute_s += times[t].compute_s;
  }
  const double n = double(all.size());
  r.per_batch.sample_s /= n, r.per_batch.gather_s /= n, r.per_batch.compute_s /= n;
  r.seeds_per_s = double(ok_seeds) / wall;
  r.p50_ms = bench::percentile(all, 0.5), r.p99_ms = bench::percentile(all, 0.99);
  return r;
}

expected<options> parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--device" && has_value) {
      const std::string_view v = argv[++i];
      if (v != "host" && v != "cuda") return make_error(errc::invalid_argument, "--device {}", v);
      o.device = v == "cuda" ? gpu::device_kind::cuda : gpu::device_kind::host;
    } else if (a == "--threads" && has_value) {
      o.threads.clear();
      for (std::string_view rest = argv[++i]; !rest.empty();) {
        const auto comma = rest.find(',');
        o.threads.push_back(std::max(1, std::atoi(std::string(rest.substr(0, comma)).c_str())));
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
      }
    } else if (a == "--batches" && has_value) {
      o.batches = std::max(4, std::atoi(argv[++i]));
    } else if (o.dataset.empty() && !a.starts_with("--")) {
      o.dataset = a;
    } else {
      return make_error(errc::invalid_argument, "unknown argument '{}'", a);
    }
  }
  if (o.dataset.empty()) return make_error(errc::invalid_argument, "no DATASET_DIR");
  return o;
}

void print_row(std::string_view label, const run_row& r) {
  fmt::print("{:>10} | {:>9.0f} | {:>7.2f} {:>7.2f} | {:>9.3f} {:>9.3f} {:>10.3f}\n", label,
             r.seeds_per_s, r.p50_ms, r.p99_ms, r.per_batch.sample_s * 1e3,
             r.per_batch.gather_s * 1e3, r.per_batch.compute_s * 1e3);
  if (r.failed > 0)  // not counted in seeds/s
    fmt::print("{:>10}   {} requests failed; the first: {}\n", "", r.failed, r.first_error);
}

}  // namespace

int main(int argc, char** argv) {
  ensure_blas_kernels(argv);  // the kernels spindle itself runs (not Prescott's on an unknown CPU)
  auto opt = parse(argc, argv);
  if (!opt) {
    fmt::print(stderr, "{}\nusage: device_breakdown DATASET_DIR [--device host|cuda] "
                       "[--threads 1,2,4,8] [--batches 40]\n", opt.error().message());
    return 2;
  }
  set_progress_enabled(false);
  nn::set_blas_threads(1);
  auto ds = graph::dataset::open(opt->dataset);
  if (!ds) return fmt::print(stderr, "{}\n", ds.error().to_string()), 1;
  ds->warm_features();
  config::model_desc d;
  d.arch = config::model_arch::graphsage;
  d.in = int(ds->feature_dim()), d.hidden = 256, d.out = 47;
  const auto mdir = (std::filesystem::temp_directory_path() / "spindle-device-breakdown").string();
  if (auto st = nn::init_model(d, 1, mdir); !st) return fmt::print(stderr, "{}\n", st.to_string()), 1;
  nn::heap_allocator weights;
  auto model = nn::model::load(mdir, weights);
  if (!model) return fmt::print(stderr, "{}\n", model.error().to_string()), 1;
  auto executors = serving::device_executors::create(*ds, opt->device, std::size_t(1) << 30);
  if (!executors) return fmt::print(stderr, "{}\n", executors.error().to_string()), 1;
  const bool cuda = opt->device == gpu::device_kind::cuda;
  const auto where = cuda ? serving::psgs_router::choice::large : serving::psgs_router::choice::small;
  thread_pool pool(1, "bench");
  serving::psgs_router router(serving::psgs_calibration{}, serving::routing_policy::fixed);
  auto pipelines = [&](int n) {
    std::vector<std::unique_ptr<serving::gnn_pipeline>> pipes;
    for (int i = 0; i < n; ++i) {
      auto ex = executors->make();
      if (!ex) fmt::print(stderr, "{}\n", ex.error().to_string()), std::exit(1);
      pipes.push_back(std::make_unique<serving::gnn_pipeline>(*ds, *model, router, pool,
                                                              serving::feature_source{}, *ex));
    }
    return pipes;
  };
  fmt::print("{}: GraphSAGE {}-256-47 [25,10], {} executor, {} cores\n", opt->dataset, d.in,
             cuda ? "cuda" : "host", std::thread::hardware_concurrency());
  const auto header = [](std::string_view first) {
    fmt::print("{:>10} | {:>9} | {:>7} {:>7} | {:>9} {:>9} {:>10}\n", first, "seeds/s", "p50 ms",
               "p99 ms", "sample ms", "gather ms", "forward ms");
  };
  fmt::print("\none pipeline, per batch size (stage times: mean per batch)\n");
  header("batch");
  {
    auto one = pipelines(1);
    for (std::size_t b : {1, 16, 64, 256, 1024})
      print_row(fmt::format("{}", b), run(one, *ds, b, b == 1 ? opt->batches * 4 : opt->batches, where));
  }
  for (std::size_t b : {64, 256}) {
    fmt::print("\nbatches of {} on N pipelines, each its own thread and executor\n", b);
    header("pipelines");
    for (int n : opt->threads) {
      auto pipes = pipelines(n);
      print_row(fmt::format("{}", n), run(pipes, *ds, b, opt->batches, where));
    }
  }
  return 0;
}
