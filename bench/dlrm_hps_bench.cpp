// End-to-end DLRM through the parameter server (HPS Fig. 10 analogue):
// samples/s and p99 batch latency for batch sizes 32..8192, embeddings looked
// up through L1 (10% of each table) -> hash-map VDB -> RocksDB PDB, next to the
// same model with every table in memory (same run, same requests), and with its
// tables in memory row-wise int8 (table_precision = "int8"): their bytes, their
// throughput and their scores' worst distance from FP32's on the same requests.
// The three take turns batch by batch on the same requests. Also the embedding
// bags alone, fp32 vs int8 vs int4, in thread CPU time per lookup.
// Model: 8 tables x rows x 64, dense 13 -> bottom [256, 64], top [256, 64, 1];
// one key per table per sample drawn by a Zipf 1.2 law (HPS Synthetic A-like).
// Usage: dlrm_hps_bench [rows_per_table=100000] [samples_per_point=100000]
#include <time.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <numeric>

#include "bench/bench_util.hpp"
#include "hps/dlrm_hps.hpp"
#include "hps/synthetic_keys.hpp"

namespace spindle::bench {
namespace {

using hps::table_vector;
using hps::zipf_keys;

constexpr int tables = 8, dim = 64;

struct request_batch {
  std::vector<float> dense;
  std::vector<nn::sparse_input> sparse;
};

request_batch make_batch(std::vector<zipf_keys>& z, int batch, std::mt19937_64& rng) {
  request_batch r;
  r.dense.resize(std::size_t(batch) * 13);
  for (auto& x : r.dense) x = std::uniform_real_distribution<float>(0, 1)(rng);
  for (int t = 0; t < tables; ++t) {
    nn::sparse_input s;
    for (int b = 0; b < batch; ++b) {
      s.offsets.push_back(b);
      s.indices.push_back(std::int64_t(z[t].next()));
    }
    s.offsets.push_back(batch);
    r.sparse.push_back(std::move(s));
  }
  return r;
}

struct point {
  double samples_per_s = 0, p99_ms = 0, lookup_share = 0, hit_rate = 0;
};

// Largest |a - b| over the click probabilities of `reqs` (the same requests).
double worst_score_gap(const nn::model& a, const nn::model& b, std::vector<request_batch>& reqs,
                       int batch) {
  double worst = 0;
  for (auto& r : reqs) {
    nn::heap_allocator alloc;
    const auto dense = nn::tensor::borrow(r.dense.data(), {batch, 13});
    auto x = a.forward_dlrm(alloc, dense, r.sparse);
    auto y = b.forward_dlrm(alloc, dense, r.sparse);
    if (!x || !y) return std::numeric_limits<double>::infinity();
    for (int i = 0; i < batch; ++i)
      worst = std::max(worst, double(std::abs(x->data()[i] - y->data()[i])));
  }
  return worst;
}

using runner_fn = std::function<void(request_batch&, hps::dlrm_timing*)>;

// Runs every one of `runs` on the same requests, taking turns batch by batch (a
// load that comes and goes on the shared machine falls on each alike); one point each.
std::vector<point> measure(int batch, std::int64_t samples, std::uint64_t rows,
                           const std::vector<runner_fn>& runs) {
  std::vector<zipf_keys> z;
  for (int t = 0; t < tables; ++t) z.emplace_back(rows, 1.2, 100 + t);
  std::mt19937_64 rng(1);
  const int batches = int(std::max<std::int64_t>(20, samples / batch));
  std::vector<request_batch> reqs;
  for (int i = 0; i < batches + 3; ++i)
    reqs.push_back(make_batch(z, batch, rng));  // fresh keys for every batch
  for (const auto& run : runs)
    for (int i = 0; i < 3; ++i) run(reqs[batches + i], nullptr);  // warm the allocator
  std::vector<std::vector<double>> lat(runs.size());
  std::vector<double> lookup_ms(runs.size()), hits(runs.size());
  for (int i = 0; i < batches; ++i)
    for (std::size_t k = 0; k < runs.size(); ++k) {
      hps::dlrm_timing timing;
      const auto b0 = std::chrono::steady_clock::now();
      runs[k](reqs[i], &timing);
      lat[k].push_back(seconds_since(b0) * 1e3);
      lookup_ms[k] += timing.lookup_ms;
      for (const auto& t : timing.tables) hits[k] += t.hit_rate / tables;
    }
  std::vector<point> out(runs.size());
  for (std::size_t k = 0; k < runs.size(); ++k) {
    const double total_ms = std::accumulate(lat[k].begin(), lat[k].end(), 0.0);
    out[k].samples_per_s = double(batches) * batch / (total_ms / 1e3);
    out[k].p99_ms = percentile(lat[k], 0.99);
    out[k].lookup_share = lookup_ms[k] / total_ms;
    out[k].hit_rate = hits[k] / batches;
  }
  return out;
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// The embedding bags alone (the part table_precision changes): the 8 tables held
// fp32, int8 and int4, the same Zipf keys, taking turns; thread CPU time per lookup
// (one thread does a bag), so other processes' load does not enter it.
void print_bag_costs(const nn::model& full, std::uint64_t rows) {
  std::vector<std::span<const float>> fp32;
  std::vector<nn::quantized_table> q8, q4;
  for (int t = 0; t < tables; ++t) {
    const auto& w = full.param("emb_l." + std::to_string(t) + ".weight");
    fp32.emplace_back(w.data(), std::size_t(w.numel()));
    q8.push_back(*nn::quantized_table::quantize(fp32.back(), std::int64_t(rows), dim, 8, "t"));
    q4.push_back(*nn::quantized_table::quantize(fp32.back(), std::int64_t(rows), dim, 4, "t"));
  }
  std::vector<zipf_keys> z;
  for (int t = 0; t < tables; ++t) z.emplace_back(rows, 1.2, 300 + t);
  std::mt19937_64 rng(3);
  double sec[3] = {0, 0, 0};
  const int batch = 512, rounds = 200;
  for (int i = 0; i < rounds; ++i) {
    const auto r = make_batch(z, batch, rng);
    for (int k = 0; k < 3; ++k) {
      nn::heap_allocator a;
      const double t0 = thread_cpu_seconds();
      for (int t = 0; t < tables; ++t) {
        const auto& in = r.sparse[std::size_t(t)];
        auto out = k == 0   ? nn::embedding_bag(a, fp32[std::size_t(t)], dim, in.indices,
                                                in.offsets, nn::reduce_op::sum)
                   : k == 1 ? nn::embedding_bag(a, q8[std::size_t(t)], in.indices, in.offsets)
                            : nn::embedding_bag(a, q4[std::size_t(t)], in.indices, in.offsets);
        if (!out) std::abort();
      }
      sec[k] += thread_cpu_seconds() - t0;
    }
  }
  const double lookups = double(rounds) * batch * tables;
  const std::size_t bytes[3] = {rows * dim * sizeof(float) * tables,
                                q8[0].bytes() * tables, q4[0].bytes() * tables};
  std::printf("embedding bags alone (8 tables, batch 512, Zipf 1.2 keys, thread CPU time):\n\n");
  std::printf("| tables | bytes | ns per lookup | vs fp32 |\n|---|---|---|---|\n");
  const char* names[3] = {"fp32", "int8", "int4"};
  for (int k = 0; k < 3; ++k)
    std::printf("| %s | %zu | %.1f | %.2f |\n", names[k], bytes[k], sec[k] / lookups * 1e9,
                sec[0] / sec[k]);
  std::printf("\n");
}

}  // namespace
}  // namespace spindle::bench

int main(int argc, char** argv) {
  using namespace spindle;
  using namespace spindle::bench;
  const auto rows = arg_or<std::uint64_t>(argc, argv, 1, 100000);
  const auto samples = arg_or<std::int64_t>(argc, argv, 2, 100000);
  setenv("SPINDLE_PROGRESS", "0", 0);
  const auto dir =
      std::filesystem::temp_directory_path() / ("spindle-dlrm-bench-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  config::model_desc d;
  d.name = "bench-dlrm";
  d.arch = config::model_arch::dlrm;
  d.dense_in = 13;
  d.bottom = {256, dim};
  d.top = {256, 64, 1};
  d.embedding_dim = dim;
  d.table_rows.assign(tables, std::int64_t(rows));
  if (auto s = nn::init_model(d, 1, (dir / "model").string()); !s)
    return std::printf("%s\n", s.to_string().c_str()), 1;
  nn::heap_allocator alloc;
  auto full = std::move(*nn::model::load((dir / "model").string(), alloc));
  auto lean = std::move(*nn::model::load((dir / "model").string(), alloc, true));
  auto int8 = std::move(*nn::model::load((dir / "model").string(), alloc, false, "int8"));
  auto pdb = std::move(*hps::persistent_db::open((dir / "pdb").string()));
  std::vector<hps::table_options> opts;
  for (int t = 0; t < tables; ++t) {
    const std::string name = "emb" + std::to_string(t);
    (void)pdb->bulk_load_safetensors(name, (dir / "model" / "weights.safetensors").string(),
                                     "emb_l." + std::to_string(t) + ".weight");
    opts.push_back({name, dim, rows, 0.10, 1.0, 0.0f, 2});
  }
  auto vdb = std::move(*hps::make_hash_map_vdb({}));
  auto session = std::move(*hps::lookup_session::create(opts, vdb.get(), pdb.get()));
  auto runner = std::move(*hps::dlrm_hps_runner::create(lean, *session));
  std::printf(
      "DLRM: 8 tables x %llu rows x 64 floats, dense 13, bottom [256,64], top [256,64,1]; "
      "HPS: L1 10%% per table, threshold 1.0 (synchronous), hash-map VDB, RocksDB PDB\n\n",
      (unsigned long long)rows);
  std::printf("tables in memory: fp32 %zu bytes, int8 %zu bytes (%.2fx smaller)\n\n",
              full.table_bytes(), int8.table_bytes(),
              double(full.table_bytes()) / double(int8.table_bytes()));
  print_bag_costs(full, rows);
  std::printf(
      "| batch | in memory samples/s | in memory p99 ms | HPS samples/s | HPS p99 ms | HPS / in "
      "memory | L1 hit rate | lookup share of HPS time | int8 in memory samples/s | int8 p99 "
      "ms | int8 / fp32 | int8 max abs score error |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (int batch : {32, 128, 512, 2048, 8192}) {
    auto dense_of = [&](request_batch& r, int b) {
      return nn::tensor::borrow(r.dense.data(), {b, 13});
    };
    const auto points = measure(
        batch, samples, rows,
        {[&](request_batch& r, hps::dlrm_timing*) {
           nn::heap_allocator a;
           (void)full.forward_dlrm(a, dense_of(r, batch), r.sparse);
         },
         [&](request_batch& r, hps::dlrm_timing* t) {
           nn::heap_allocator a;
           (void)runner.infer(a, dense_of(r, batch), r.sparse, t);
         },
         [&](request_batch& r, hps::dlrm_timing*) {
           nn::heap_allocator a;
           (void)int8.forward_dlrm(a, dense_of(r, batch), r.sparse);
         }});
    const point &mem = points[0], &hps = points[1], &q8 = points[2];
    std::vector<zipf_keys> z;
    for (int t = 0; t < tables; ++t) z.emplace_back(rows, 1.2, 100 + t);
    std::mt19937_64 rng(2);
    std::vector<request_batch> check;
    for (int i = 0; i < std::max(1, 4096 / batch); ++i) check.push_back(make_batch(z, batch, rng));
    std::printf(
        "| %d | %.0f | %.2f | %.0f | %.2f | %.2f | %.3f | %.0f%% | %.0f | %.2f | %.2f | %.1e |\n",
        batch, mem.samples_per_s, mem.p99_ms, hps.samples_per_s, hps.p99_ms,
        hps.samples_per_s / mem.samples_per_s, hps.hit_rate, hps.lookup_share * 100,
        q8.samples_per_s, q8.p99_ms, q8.samples_per_s / mem.samples_per_s,
        worst_score_gap(full, int8, check, batch));
    std::fflush(stdout);
  }
  session.reset();
  pdb.reset();
  std::filesystem::remove_all(dir);
  return 0;
}
