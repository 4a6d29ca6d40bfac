// Feature gather benchmark: 1,024-seed 2-hop [25,10] batches on an
// R-MAT graph with 128-float features. Gathered GB/s from a local shard, from
// another process over UCX shared memory, and over UCX tcp, each next to two
// same-run baselines: single-thread memcpy GB/s, and the random-row gather of
// plain C++ over the same matrix and the same id lists. Over tcp, Spindle's read
// requests are shown beside UCX's own emulated gets (SPINDLE_UCX_EMULATED_GETS),
// which they replace.
//
// usage: gather_bench SPINDLE_BINARY [SCALE=20] [BATCHES=10] [DATA_DIR]
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <random>

#include "bench/bench_util.hpp"
#include "core/npy.hpp"
#include "core/progress.hpp"
#include "core/subprocess.hpp"
#include "features/feature_gather.hpp"
#include "features/feature_shard.hpp"
#include "graph/dataset.hpp"
#include "graph/prepare.hpp"
#include "graph/sampler.hpp"
#include "transport/ucx/ucx.hpp"

using namespace spindle;
namespace ucx = transport::ucx;

namespace {

constexpr int kDim = 128;
constexpr std::size_t kRowBytes = kDim * sizeof(float);

std::vector<std::vector<std::int64_t>> make_batches(const graph::dataset& ds, int batches) {
  graph::inline_executor sampler;
  std::mt19937_64 rng(42);
  std::vector<std::vector<std::int64_t>> out;
  for (int b = 0; b < batches; ++b) {
    std::vector<std::int64_t> seeds(1024);
    for (auto& s : seeds) s = std::int64_t(rng() % std::uint64_t(ds.num_nodes()));
    auto sub = sampler.sample(ds.graph(), seeds, {{25, 10}, false, std::uint64_t(b)});
    out.push_back(std::move(sub->nodes));
  }
  return out;
}

double memcpy_gbs(std::size_t bytes) {
  std::vector<std::byte> a(bytes, std::byte{1}), b(bytes);
  std::memcpy(b.data(), a.data(), bytes);  // touch
  auto t0 = std::chrono::steady_clock::now();
  int reps = 0;
  while (bench::seconds_since(t0) < 0.5) std::memcpy(b.data(), a.data(), bytes), ++reps;
  return double(bytes) * reps / bench::seconds_since(t0) / 1e9;
}

template <class F>
double gbs(const std::vector<std::vector<std::int64_t>>& batches, std::vector<std::byte>& out,
           F&& f) {
  std::size_t bytes = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (const auto& ids : batches) f(ids, out), bytes += ids.size() * kRowBytes;
  return double(bytes) / bench::seconds_since(t0) / 1e9;
}

// The baseline reads the same matrix from resident memory (the mmap'd file
// would charge it page faults the served copies do not pay).
double plain_gather(const std::vector<std::byte>& matrix,
                    const std::vector<std::vector<std::int64_t>>& batches,
                    std::vector<std::byte>& out) {
  const auto* base = reinterpret_cast<const float*>(matrix.data());
  return gbs(batches, out, [&](const std::vector<std::int64_t>& ids, std::vector<std::byte>& o) {
    for (std::size_t i = 0; i < ids.size(); ++i)
      std::memcpy(o.data() + i * kRowBytes, base + ids[i] * kDim, kRowBytes);
  });
}

expected<double> gatherer_gbs(features::feature_gatherer& g,
                              const std::vector<std::vector<std::int64_t>>& batches,
                              std::vector<std::byte>& out) {
  status failed;
  double r =
      gbs(batches, out, [&](const std::vector<std::int64_t>& ids, std::vector<std::byte>& o) {
        if (auto rep = g.gather(ids, o); !rep) failed = rep.error();
      });
  if (!failed) return failed;
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Runs `rounds` passes over the batches; the median pass is reported.
expected<double> remote_gbs(const std::string& binary, const std::string& dir,
                            const std::string& rows, const std::string& tls, int rounds,
                            const features::feature_lookup& lookup,
                            const std::vector<std::vector<std::int64_t>>& batches,
                            std::vector<std::byte>& out) {
  std::vector<std::string> env = {"SPINDLE_PROGRESS=0"};
  if (!tls.empty()) env.push_back("UCX_TLS=" + tls);
  SPINDLE_ASSIGN_OR_RETURN(auto owner,
                           child_process::spawn({binary, "serve-shard", dir, "--rows", rows}, env));
  SPINDLE_ASSIGN_OR_RETURN(auto line, owner.wait_for("descriptor ", 120'000));
  SPINDLE_ASSIGN_OR_RETURN(auto desc, ucx::region_descriptor::decode(line));
  SPINDLE_ASSIGN_OR_RETURN(auto ctx, ucx::context::create(tls));
  SPINDLE_ASSIGN_OR_RETURN(auto w, ucx::worker::create(ctx));
  SPINDLE_ASSIGN_OR_RETURN(auto region, ucx::remote_region::attach(w, desc, 60'000));
  fmt::print(stderr, "{}: region {} mapped into this process\n", tls.empty() ? "default" : tls,
             region->mapped() ? "is" : "is not");
  features::feature_gatherer g(lookup, kRowBytes, {{nullptr, region.get(), 1.0}});
  SPINDLE_ASSIGN_OR_RETURN(auto warm, gatherer_gbs(g, {batches.front()}, out));
  (void)warm;
  std::vector<double> passes;
  for (int r = 0; r < rounds; ++r) {
    SPINDLE_ASSIGN_OR_RETURN(auto v, gatherer_gbs(g, batches, out));
    passes.push_back(v);
  }
  return median(passes);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2)
    return fmt::print(stderr, "usage: gather_bench SPINDLE_BINARY [SCALE] [BATCHES] [DIR]\n"), 2;
  const std::string binary = argv[1];
  const int scale = argc > 2 ? std::atoi(argv[2]) : 20;
  const int nbatches = argc > 3 ? std::atoi(argv[3]) : 10;
  const std::string dir = argc > 4 ? argv[4] : fmt::format("/tmp/spindle-gather-bench-s{}", scale);
  set_progress_enabled(false);
  thread_pool pool(0, "bench");
  if (!graph::dataset::open(dir)) {
    graph::generate_options o;
    o.rmat.scale = scale;
    o.feature_dim = kDim;
    if (auto st = graph::generate_dataset(o, dir, pool); !st)
      return fmt::print(stderr, "{}\n", st.to_string()), 1;
  }
  auto ds = graph::dataset::open(dir);
  if (!ds) return fmt::print(stderr, "{}\n", ds.error().to_string()), 1;
  auto batches = make_batches(*ds, nbatches);
  std::size_t max_rows = 0, total_rows = 0;
  for (const auto& b : batches) max_rows = std::max(max_rows, b.size()), total_rows += b.size();
  std::vector<std::byte> out(max_rows * kRowBytes);

  // One shard holding every row in id order: the local copy and the served copy.
  const std::uint64_t n = std::uint64_t(ds->num_nodes());
  features::lookup_builder b(n, 1);
  for (std::uint64_t v = 0; v < n; ++v) (void)b.assign(v, {0});
  auto lookup = std::move(b).finish();
  std::vector<std::int64_t> all(n);
  std::iota(all.begin(), all.end(), 0);
  const std::string rows = dir + "/all_rows.npy";
  (void)write_npy(rows, dtype::i64, {std::int64_t(n)}, all.data());
  std::vector<std::byte> local(features::shard_bytes(n, kDim));
  (void)features::fill_shard(*lookup, 0, ds->features(), kDim, local);
  features::feature_gatherer local_g(*lookup, kRowBytes, {{local.data(), nullptr, 0.0}});

  // Plain and local alternate over 5 rounds (medians), so machine noise hits both.
  std::vector<double> copies, plains, locals;
  status local_failed;
  for (int r = 0; r < 5; ++r) {
    copies.push_back(memcpy_gbs(std::size_t(256) << 20));
    plains.push_back(plain_gather(local, batches, out));
    auto l = gatherer_gbs(local_g, batches, out);
    if (!l)
      local_failed = l.error();
    else
      locals.push_back(*l);
  }
  double copy = median(copies), plain = median(plains);
  expected<double> loc =
      local_failed ? expected<double>(median(locals)) : expected<double>(local_failed);
  auto shm = remote_gbs(binary, dir, rows, "", 5, *lookup, batches, out);
  auto tcp = remote_gbs(binary, dir, rows, "tcp", 3, *lookup, {batches.front()}, out);
  setenv("SPINDLE_UCX_EMULATED_GETS", "1", 1);  // read by each attach
  auto tcp_gets = remote_gbs(binary, dir, rows, "tcp", 3, *lookup, {batches.front()}, out);
  fmt::print("R-MAT scale {}, {} x 1024-seed [25,10] batches, {:.0f} rows/batch avg, {} B rows\n",
             scale, nbatches, double(total_rows) / nbatches, kRowBytes);
  fmt::print("{:<38} {:>8} {:>12} {:>10}\n", "path", "GB/s", "vs gather", "vs memcpy");
  auto row = [&](std::string_view name, double v) {
    fmt::print("{:<38} {:>8.2f} {:>11.0f}% {:>9.0f}%\n", name, v, 100 * v / plain, 100 * v / copy);
  };
  row("baseline: memcpy (1 thread)", copy);
  row("baseline: plain random-row gather", plain);
  auto show = [&](std::string_view name, const expected<double>& v) {
    if (v)
      row(name, *v);
    else
      fmt::print("{:<38} failed: {}\n", name, v.error().to_string());
  };
  show("local shard (pointer)", loc);
  show("other process, UCX default (shm)", shm);
  show("other process, tcp, read requests", tcp);
  show("other process, tcp, UCX emulated gets", tcp_gets);
  return 0;
}
