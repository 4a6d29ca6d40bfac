// GNNSched PMC error table: for every GNN and several sampled-block
// sizes, the estimate next to the peak measured by nn's allocator in the same
// run (the baseline), the relative error, and whether the estimate after the
// 1.1 safety factor covers the measurement.
//
// usage: pmc_bench
#include <fmt/format.h>

#include <filesystem>
#include <random>

#include "bench/bench_util.hpp"
#include "colocation/pmc_check.hpp"
#include "core/progress.hpp"

using namespace spindle;

int main() {
  set_progress_enabled(false);
  thread_pool pool(0, "bench");
  auto g = bench::rmat_graph(16, 16, pool);
  graph::inline_executor sampler;
  const std::string tmp = (std::filesystem::temp_directory_path() / "spindle-pmc-bench").string();
  fmt::print("{:<10} {:>6} {:>6} {:>8} {:>9} {:>12} {:>12} {:>8} {:>10}\n", "model", "layers",
             "batch", "nodes", "edges", "estimate", "measured", "error", "x1.1 ok");
  double worst = 0;
  for (auto arch : {config::model_arch::graphsage, config::model_arch::gcn, config::model_arch::gat,
                    config::model_arch::gin}) {
    for (int layers : {2, 8}) {
      config::model_desc d;
      d.arch = arch;
      d.in = 128, d.hidden = arch == config::model_arch::gat ? 64 : 256, d.heads = 4, d.out = 47;
      d.layers = layers;
      std::string dir = fmt::format("{}/{}-{}", tmp, config::to_string(arch), layers);
      if (auto st = nn::init_model(d, 1, dir); !st)
        return fmt::print(stderr, "{}\n", st.to_string()), 1;
      std::vector<int> fanouts = layers == 2 ? std::vector<int>{25, 10} : std::vector<int>(8, 2);
      for (int batch : {1, 16, 256, 1024}) {
        std::vector<std::int64_t> seeds(static_cast<std::size_t>(batch));
        std::mt19937_64 rng{std::uint64_t(batch)};
        for (auto& s : seeds) s = std::int64_t(rng() % std::uint64_t(g.num_nodes));
        auto sub = sampler.sample(g.view(), seeds, {fanouts, false, 1});
        auto c = colocation::check_pmc(dir, *sub);
        if (!c) return fmt::print(stderr, "{}\n", c.error().to_string()), 1;
        worst = std::max(worst, std::abs(c->relative_error()));
        fmt::print("{:<10} {:>6} {:>6} {:>8} {:>9} {:>9.2f} MiB {:>8.2f} MiB {:>7.2f}% {:>10}\n",
                   config::to_string(arch), layers, batch, c->nodes, c->edges,
                   double(c->estimate.peak_bytes) / 1048576, double(c->measured_peak) / 1048576,
                   100 * c->relative_error(),
                   c->estimate.pmc_bytes >= c->measured_peak ? "yes" : "NO");
      }
    }
  }
  // DLRM(A) sizes (Hera Table I) with 10k-row tables.
  config::model_desc d;
  d.arch = config::model_arch::dlrm;
  d.dense_in = 128, d.bottom = {64, 64}, d.top = {256, 64, 1}, d.embedding_dim = 64;
  d.table_rows.assign(8, 10000);
  const std::string dir = tmp + "/dlrm";
  if (auto st = nn::init_model(d, 1, dir); !st)
    return fmt::print(stderr, "{}\n", st.to_string()), 1;
  for (int batch : {1, 64, 1024}) {
    nn::heap_allocator alloc;
    auto m = nn::model::load(dir, alloc);
    std::vector<float> dense(std::size_t(batch) * 128, 0.5f);
    std::vector<nn::sparse_input> sparse(8);
    for (auto& sp : sparse) {
      sp.offsets.push_back(0);
      for (int b = 0; b < batch; ++b) {
        for (int k = 0; k < 80; ++k) sp.indices.push_back((b * 80 + k) % 10000);
        sp.offsets.push_back(std::int64_t(sp.indices.size()));
      }
    }
    auto y = m->forward_dlrm(alloc, nn::tensor::borrow(dense.data(), {batch, 128}), sparse);
    if (!y) return fmt::print(stderr, "{}\n", y.error().to_string()), 1;
    auto e = colocation::estimate_pmc(colocation::dlrm_graph(d, batch));
    const double err = (double(e.peak_bytes) - double(alloc.peak())) / double(alloc.peak());
    worst = std::max(worst, std::abs(err));
    fmt::print("{:<10} {:>6} {:>6} {:>8} {:>9} {:>9.2f} MiB {:>8.2f} MiB {:>7.2f}% {:>10}\n",
               "dlrm(A)", "-", batch, "-", "-", double(e.peak_bytes) / 1048576,
               double(alloc.peak()) / 1048576, 100 * err,
               e.pmc_bytes >= alloc.peak() ? "yes" : "NO");
  }
  fmt::print("largest |error|: {:.2f}% (target < 8%)\n", 100 * worst);
  return 0;
}
