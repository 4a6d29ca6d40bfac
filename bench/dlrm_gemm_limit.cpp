// The GEMM-only limit of a DLRM: its bottom and top MLPs' matrix products alone
// (cblas_sgemm, or at a few samples one cblas_sgemv per sample when faster, on
// the OpenBLAS Spindle links, or oneDNN's FP32 matmul (nn/f32_matmul_onednn,
// whatever SPINDLE_FP32_GEMM says), or oneDNN's on weights packed once for it
// (nn/packed_weight, blocks of 64 rows and a padded last one) when faster: the best routine, which
// Spindle's layers approach by a fixed rule; no bias, activation, embedding or
// interaction, into preallocated outputs), back to back at each batch size. The
// best of one stream on THREADS BLAS threads and THREADS streams of one BLAS
// thread each (as a server with THREADS workers runs them). No server can answer
// more samples a second than this on the same cores, so served figures are read
// as a fraction of it (bench/dlrm_vs_torch.sh prints them side by side). Beside
// it, the model's whole forward in this process (nn::model::forward_rec: bags,
// MLPs, interaction; THREADS streams of one BLAS thread, uniform keys): the gap
// from the limit to it is the model's own work, from it to a served figure the
// serving path's.
//
// usage: dlrm_gemm_limit MODEL_DIR [BATCHES=1,64,256,1024] [SECONDS=2] [THREADS=2]
// Prints one JSON line per batch: {"batch", "gemm_samples_per_s", "gflops",
// "forward_samples_per_s", "routines": {each routine's samples a second}}.
#include <cblas.h>
#include <fmt/format.h>

#include "nn/f32_matmul.hpp"
#include "nn/packed_weight.hpp"

#include <atomic>
#include <chrono>
#include <random>
#include <cstdio>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "config/model.hpp"
#include "nn/arena.hpp"
#include "core/blas_kernels.hpp"
#include "nn/model.hpp"

extern "C" void openblas_set_num_threads(int);

using namespace spindle;

namespace {

using clock_type = std::chrono::steady_clock;

struct product {
  int k = 0, n = 0;  // x[m, k] @ w[n, k]^T -> y[m, n]
};

// The MLPs' products: dense_in -> bottom..., then the interaction's width ->
// top... (the interaction is dim + k(k-1)/2 wide over the k = tables + 1 vectors).
std::vector<product> mlp_products(const config::model_desc& d) {
  std::vector<product> out;
  int in = d.dense_in;
  for (int w : d.bottom) out.push_back({std::exchange(in, w), w});
  const int k = int(d.table_rows.size()) + 1;
  in = d.embedding_dim + k * (k - 1) / 2;
  for (int w : d.top) out.push_back({std::exchange(in, w), w});
  return out;
}

enum class routine { sgemm, sgemv, onednn, packed };

// Runs every product back to back for `seconds`, as sgemm, one sgemv per
// sample, or oneDNN's matmul; returns samples a second (0: oneDNN cannot here).
double stream(const std::vector<product>& ps, int batch, double seconds, routine how) {
  const bool gemv = how == routine::sgemv;
  std::vector<std::vector<float>> x, w, y;
  for (const auto& p : ps) {
    x.emplace_back(std::size_t(batch) * p.k, 0.5f);
    w.emplace_back(std::size_t(p.n) * p.k, 0.25f);
    y.emplace_back(std::size_t(batch) * p.n);
  }
  bool ran = true;
  std::vector<std::shared_ptr<const nn::packed_weight>> packed;
  if (how == routine::packed)
    for (std::size_t i = 0; i < ps.size(); ++i) {
      packed.push_back(nn::packed_weight::pack(w[i], ps[i].n, ps[i].k));
      if (!packed.back()) return 0;
    }
  auto pass = [&] {
    for (std::size_t i = 0; i < ps.size(); ++i)
      if (how == routine::packed) {
        const auto done = packed[i]->multiply_blocks(x[i].data(), y[i].data(), batch);
        if (done < batch)
          ran = nn::f32_matmul_onednn(x[i].data() + done * ps[i].k, w[i].data(),
                                      y[i].data() + done * ps[i].n, batch - done, ps[i].k,
                                      ps[i].n, false) && ran;
      } else if (how == routine::onednn)
        ran = nn::f32_matmul_onednn(x[i].data(), w[i].data(), y[i].data(), batch, ps[i].k,
                                    ps[i].n, false) && ran;
      else if (gemv)
        for (int r = 0; r < batch; ++r)
          cblas_sgemv(CblasRowMajor, CblasNoTrans, ps[i].n, ps[i].k, 1.0f, w[i].data(), ps[i].k,
                      x[i].data() + std::size_t(r) * ps[i].k, 1, 0.0f,
                      y[i].data() + std::size_t(r) * ps[i].n, 1);
      else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, batch, ps[i].n, ps[i].k, 1.0f,
                  x[i].data(), ps[i].k, w[i].data(), ps[i].k, 0.0f, y[i].data(), ps[i].n);
  };
  pass();  // warm-up
  if (!ran) return 0;
  const auto t0 = clock_type::now();
  std::int64_t passes = 0;
  double elapsed = 0;
  do {
    pass();
    ++passes;
    elapsed = std::chrono::duration<double>(clock_type::now() - t0).count();
  } while (elapsed < seconds);
  return double(batch) * double(passes) / elapsed;
}

double best_of(const std::vector<product>& ps, int batch, double seconds, int threads,
               routine how) {
  openblas_set_num_threads(threads);
  // oneDNN's runs on one thread each (as Spindle's layers call it): streams only.
  const bool dnnl = how == routine::onednn || how == routine::packed;
  const double one = dnnl ? 0 : stream(ps, batch, seconds, how);
  openblas_set_num_threads(1);
  std::vector<double> each(static_cast<std::size_t>(threads));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] { each[std::size_t(t)] = stream(ps, batch, seconds, how); });
  for (auto& th : pool) th.join();
  double many = 0;
  for (double v : each) many += v;
  return std::max(one, many);
}

// Each routine's samples a second: sgemm, oneDNN's plain matmul, oneDNN's on
// packed weights and, at a few samples, one sgemv per sample (sgemm packs the
// whole weight matrix per call, which a handful of rows does not repay).
std::vector<std::pair<const char*, double>> routines(const std::vector<product>& ps, int batch,
                                                     double seconds, int threads) {
  std::vector<std::pair<const char*, double>> out{
      {"sgemm", best_of(ps, batch, seconds, threads, routine::sgemm)},
      {"onednn", best_of(ps, batch, seconds, threads, routine::onednn)},
      {"packed", best_of(ps, batch, seconds, threads, routine::packed)}};
  if (batch <= 8) out.push_back({"sgemv", best_of(ps, batch, seconds, threads, routine::sgemv)});
  return out;
}

// The model's forward, back to back on one thread for `seconds`; samples a second.
double forward_stream(const nn::model& m, const config::model_desc& d, int batch, double seconds,
                      unsigned seed) {
  nn::arena_allocator a;
  nn::heap_allocator h;
  auto dense = nn::tensor::empty(h, {batch, std::max(1, d.dense_in)});
  if (!dense) return 0;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  for (std::int64_t i = 0; i < dense->numel(); ++i) dense->data()[i] = normal(rng);
  std::vector<nn::sparse_input> sparse(d.table_rows.size());
  for (std::size_t t = 0; t < sparse.size(); ++t) {  // one key a sample; offsets [0..batch]
    for (int b = 0; b < batch; ++b) {
      sparse[t].offsets.push_back(b);
      sparse[t].indices.push_back(std::int64_t(rng() % std::uint64_t(d.table_rows[t])));
    }
    sparse[t].offsets.push_back(batch);
  }
  const auto t0 = clock_type::now();
  std::int64_t passes = 0;
  double elapsed = 0;
  do {
    if (auto out = m.forward_rec(a, *dense, sparse); !out) {
      std::fprintf(stderr, "dlrm_gemm_limit: forward: %s\n", out.error().message().c_str());
      return 0;
    }
    a.reset();
    ++passes;
    elapsed = std::chrono::duration<double>(clock_type::now() - t0).count();
  } while (elapsed < seconds);
  return double(batch) * double(passes) / elapsed;
}

double forward(const nn::model& m, const config::model_desc& d, int batch, double seconds,
               int threads) {
  openblas_set_num_threads(1);
  std::vector<double> each(static_cast<std::size_t>(threads));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] { each[std::size_t(t)] = forward_stream(m, d, batch, seconds, t + 1); });
  for (auto& th : pool) th.join();
  double sum = 0;
  for (double v : each) sum += v;
  return sum;
}

}  // namespace

int main(int argc, char** argv) {
  ensure_blas_kernels(argv);  // the kernels spindle itself runs
  if (argc < 2) {
    std::fprintf(stderr, "usage: dlrm_gemm_limit MODEL_DIR [BATCHES=1,64,256,1024] [SECONDS=2] "
                         "[THREADS=2]\n");
    return 2;
  }
  auto desc = config::load_model_desc(argv[1]);
  if (!desc) {
    std::fprintf(stderr, "dlrm_gemm_limit: %s\n", desc.error().message().c_str());
    return 1;
  }
  if (desc->bottom.empty() || desc->top.empty()) {
    std::fprintf(stderr, "dlrm_gemm_limit: %s: not a DLRM (no bottom/top MLP)\n", argv[1]);
    return 1;
  }
  const std::string batches = argc > 2 ? argv[2] : "1,64,256,1024";
  const double seconds = argc > 3 ? std::stod(argv[3]) : 2.0;
  const int threads = argc > 4 ? std::max(1, std::stoi(argv[4])) : 2;
  const auto ps = mlp_products(*desc);
  nn::heap_allocator weights;
  auto model = nn::model::load(argv[1], weights);
  if (!model) {
    std::fprintf(stderr, "dlrm_gemm_limit: %s\n", model.error().message().c_str());
    return 1;
  }
  double flops = 0;
  for (const auto& p : ps) flops += 2.0 * p.k * p.n;
  for (std::size_t at = 0; at < batches.size();) {
    const auto comma = batches.find(',', at);
    const int batch = std::stoi(batches.substr(at, comma - at));
    const auto each = routines(ps, batch, seconds, threads);
    double sps = 0;
    std::string by;
    for (const auto& [name, v] : each) {
      sps = std::max(sps, v);
      by += fmt::format("{}\"{}\": {:.1f}", by.empty() ? "" : ", ", name, v);
    }
    const double fwd = forward(*model, *desc, batch, seconds, threads);
    std::printf("{\"batch\": %d, \"gemm_samples_per_s\": %.1f, \"gflops\": %.2f, "
                "\"forward_samples_per_s\": %.1f, \"routines\": {%s}}\n",
                batch, sps, sps * flops / 1e9, fwd, by.c_str());
    std::fflush(stdout);
    at = comma == std::string::npos ? batches.size() : comma + 1;
  }
  return 0;
}
