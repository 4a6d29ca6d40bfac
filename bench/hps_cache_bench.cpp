// HPS L1 cache benchmark (HugeCTR HPS §7 analogues) on a power-law key stream:
//  1. Query / Replace throughput (keys/s, GB/s of vectors) by batch size and
//     threads, next to same-run baselines: std::unordered_map and
//     absl::flat_hash_map lookups of the same vectors (whole table resident),
//     and memcpy.
//  2. Hit rate vs cache fraction (1%, 5%, 10%, 50%) in the stable stage.
//  3. Warm-up curve (Fig. 7 analogue): per-batch hit rate and latency through the
//     lookup session (L1 -> hash-map VDB -> RocksDB PDB) for hit-rate
//     thresholds 0.0, 0.5, 1.0; table + CSV + gnuplot PNG.
// Usage: hps_cache_bench [rows=1000000] [dim=64] [out_prefix=hps-warmup]
#include <absl/container/flat_hash_map.h>

#include <filesystem>
#include <fstream>
#include <thread>
#include <unordered_map>

#include "bench/bench_util.hpp"
#include "core/subprocess.hpp"
#include "hps/lookup_session.hpp"
#include "hps/synthetic_keys.hpp"

namespace spindle::bench {
namespace {

using hps::table_vector;
using hps::zipf_keys;

using hps::cache_key;
constexpr double alpha = 1.2;
constexpr std::size_t stream_keys = 1 << 21;  // per thread

struct table {
  std::uint64_t rows;
  std::uint32_t dim;
  std::vector<float> values;  // [rows x dim]
  table(std::uint64_t r, std::uint32_t d) : rows(r), dim(d), values(r * d) {
    for (std::uint64_t k = 0; k < r; ++k) table_vector(k, d, values.data() + k * d);
  }
  const float* row(cache_key k) const { return values.data() + k * dim; }
};

// Runs fn(thread) on `threads` threads at once; returns wall seconds.
template <class F>
double run_threads(int threads, F fn) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) ts.emplace_back(fn, t);
  for (auto& t : ts) t.join();
  return seconds_since(t0);
}

void fill_cache(hps::embedding_cache& c, const table& tb, zipf_keys& z) {
  std::vector<float> v;
  hps::cache_misses m;
  for (int i = 0; i < 2000; ++i) {
    auto keys = z.batch(1024);
    std::vector<float> out(keys.size() * tb.dim);
    (void)c.query(keys, out, m);
    v.resize(m.keys.size() * tb.dim);
    for (std::size_t j = 0; j < m.keys.size(); ++j)
      std::copy_n(tb.row(m.keys[j]), tb.dim, v.data() + j * tb.dim);
    (void)c.replace(m.keys, v);
  }
}

template <class Map>
double map_lookup_rate(const Map& map, const table& tb,
                       const std::vector<std::vector<cache_key>>& streams, std::size_t batch,
                       int threads) {
  const double s = run_threads(threads, [&](int t) {
    std::vector<float> out(batch * tb.dim);
    const auto& keys = streams[t];
    for (std::size_t b = 0; b + batch <= keys.size(); b += batch) {
      for (std::size_t i = 0; i < batch; ++i) {
        const auto it = map.find(keys[b + i]);
        if (it != map.end())
          std::copy_n(tb.values.data() + std::uint64_t(it->second) * tb.dim, tb.dim,
                      out.data() + i * tb.dim);
      }
    }
  });
  return double(threads) * double(streams[0].size() / batch * batch) / s;
}

double memcpy_gbs(const table& tb) {
  std::vector<float> dst(tb.values.size());
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 3; ++i) std::memcpy(dst.data(), tb.values.data(), tb.values.size() * 4);
  return 3.0 * double(tb.values.size() * 4) / seconds_since(t0) / 1e9;
}

void throughput_section(const table& tb) {
  zipf_keys z(tb.rows, alpha, 7);
  std::printf(
      "table %llu rows x %u floats; stream: Zipf alpha %.1f, top 10%% of keys = %.1f%% of "
      "lookups\n",
      (unsigned long long)tb.rows, tb.dim, alpha, 100.0 * z.head_mass(0.1));
  std::unordered_map<cache_key, std::uint32_t> std_map;
  absl::flat_hash_map<cache_key, std::uint32_t> absl_map;
  for (std::uint64_t k = 0; k < tb.rows; ++k) {
    std_map[k] = std::uint32_t(k);
    absl_map[k] = std::uint32_t(k);
  }
  auto cache = std::move(*hps::embedding_cache::create({tb.rows / 10, tb.dim, 2}));
  fill_cache(*cache, tb, z);
  const double vec_gb = double(tb.dim) * 4 / 1e9;
  std::printf("baseline memcpy (1 thread): %.1f GB/s\n\n", memcpy_gbs(tb));
  std::printf(
      "| batch | threads | L1 query Mkeys/s | hit rate | L1 replace Mkeys/s | unordered_map "
      "Mkeys/s | absl flat_hash_map Mkeys/s | L1 query / absl |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  for (std::size_t batch : {64, 1024, 16384}) {
    for (int threads : {1, 2}) {
      std::vector<std::vector<cache_key>> streams;
      for (int t = 0; t < threads; ++t) streams.push_back(z.batch(stream_keys));
      std::atomic<std::uint64_t> hits{0};
      const double qs = run_threads(threads, [&](int t) {
        std::vector<float> out(batch * tb.dim);
        hps::cache_misses m;
        std::uint64_t h = 0;
        for (std::size_t b = 0; b + batch <= streams[t].size(); b += batch) {
          (void)cache->query(std::span(streams[t]).subspan(b, batch), out, m);
          h += batch - m.keys.size();
        }
        hits += h;
      });
      const double total = double(threads) * double(stream_keys / batch * batch);
      std::vector<float> vals(batch * tb.dim);
      const double rs = run_threads(threads, [&](int t) {
        std::vector<float> v(batch * tb.dim);
        for (std::size_t b = 0; b + batch <= streams[t].size() / 4; b += batch) {
          for (std::size_t i = 0; i < batch; ++i)
            std::copy_n(tb.row(streams[t][b + i]), tb.dim, v.data() + i * tb.dim);
          (void)cache->replace(std::span(streams[t]).subspan(b, batch), v);
        }
      });
      const double replaced = double(threads) * double(stream_keys / 4 / batch * batch);
      const double std_rate = map_lookup_rate(std_map, tb, streams, batch, threads);
      const double absl_rate = map_lookup_rate(absl_map, tb, streams, batch, threads);
      const double q_rate = total / qs;
      std::printf(
          "| %zu | %d | %.2f (%.2f GB/s) | %.3f | %.2f | %.2f (%.2f GB/s) | %.2f (%.2f GB/s) | "
          "%.2f |\n",
          batch, threads, q_rate / 1e6, q_rate * vec_gb, double(hits) / total, replaced / rs / 1e6,
          std_rate / 1e6, std_rate * vec_gb, absl_rate / 1e6, absl_rate * vec_gb,
          q_rate / absl_rate);
      std::fflush(stdout);
    }
  }
}

void plot_hit_rates(const std::string& prefix) {
  std::ofstream gp(prefix + "-hit-rate.gp");
  gp << "set terminal png size 800,500\nset output '" << prefix << "-hit-rate.png'\n"
     << "set datafile separator ','\nset logscale x\nset xlabel 'cache size (% of the table)'\n"
     << "set ylabel 'stable hit rate'\nset key right bottom\nset yrange [0:1]\n"
     << "set title 'L1 hit rate vs cache size: Zipf 1.2, batch 1024'\n"
     << "plot '" << prefix << "-hit-rate.csv' every ::1 u 1:2 w lp t 'per lookup', '" << prefix
     << "-hit-rate.csv' every ::1 u 1:3 w lp t 'per unique key (HPS)'\n";
  gp.close();
  if (auto p = child_process::spawn({"/usr/bin/gnuplot", prefix + "-hit-rate.gp"});
      p && p->wait() == 0)
    std::printf("plot: %s-hit-rate.png\n", prefix.c_str());
}

void hit_rate_section(const table& tb, const std::string& prefix) {
  std::ofstream csv(prefix + "-hit-rate.csv");
  csv << "cache_percent,per_lookup,per_unique_key\n";
  std::printf(
      "\nhit rate vs cache fraction (batch 1024, query then replace misses; stable = last half of "
      "%zu keys)\n\n",
      stream_keys);
  std::printf(
      "| cache fraction | slots | hit rate per lookup, stable | per unique key (HPS), stable | per "
      "lookup, whole run |\n|---|---|---|---|---|\n");
  for (double f : {0.01, 0.05, 0.10, 0.50}) {
    zipf_keys z(tb.rows, alpha, 11);
    auto c = std::move(
        *hps::embedding_cache::create({std::uint64_t(double(tb.rows) * f), tb.dim, 2}));
    std::uint64_t hits = 0, all = 0, hits2 = 0, all2 = 0, uhits = 0, uall = 0;
    hps::cache_misses m, um;
    std::vector<float> out(1024 * tb.dim), v;
    std::vector<cache_key> unique;
    std::vector<std::uint32_t> inverse;
    for (std::size_t b = 0; b < stream_keys / 1024; ++b) {
      const auto keys = z.batch(1024);
      hps::dedup_keys(keys, unique, inverse);
      (void)c->query(unique, std::span(out).first(unique.size() * tb.dim), um);
      (void)c->query(keys, out, m);
      v.resize(m.keys.size() * tb.dim);
      for (std::size_t j = 0; j < m.keys.size(); ++j)
        std::copy_n(tb.row(m.keys[j]), tb.dim, v.data() + j * tb.dim);
      (void)c->replace(m.keys, v);
      hits += 1024 - m.keys.size();
      all += 1024;
      if (b >= stream_keys / 2048) {
        hits2 += 1024 - m.keys.size();
        all2 += 1024;
        uhits += unique.size() - um.keys.size();
        uall += unique.size();
      }
    }
    std::printf("| %.0f%% | %llu | %.3f | %.3f | %.3f |\n", f * 100,
                (unsigned long long)c->capacity(), double(hits2) / all2, double(uhits) / uall,
                double(hits) / all);
    csv << f * 100 << "," << double(hits2) / all2 << "," << double(uhits) / uall << "\n";
  }
  csv.close();
  plot_hit_rates(prefix);
}

struct warm_point {
  double hit_rate, latency_ms;
};

std::vector<warm_point> warm_up(const table& tb, double threshold, hps::persistent_db& pdb,
                                int batches) {
  auto vdb = std::move(*hps::make_hash_map_vdb({}));
  hps::table_options t{"t", tb.dim, tb.rows, 0.05, threshold, 0.0f, 2};
  auto s = std::move(*hps::lookup_session::create({t}, vdb.get(), &pdb));
  zipf_keys z(tb.rows, alpha, 5);
  std::vector<warm_point> pts;
  std::vector<float> out(1024 * tb.dim);
  for (int b = 0; b < batches; ++b) {
    const auto keys = z.batch(1024);
    const auto t0 = std::chrono::steady_clock::now();
    auto r = s->lookup(0, keys, out);
    pts.push_back({r ? r->hit_rate : 0.0, seconds_since(t0) * 1e3});
  }
  s->wait_idle();
  return pts;
}

void plot_warm_up(const std::vector<std::vector<warm_point>>& curves,
                  const std::vector<double>& thresholds, const std::string& prefix) {
  std::ofstream csv(prefix + ".csv");
  csv << "batch";
  for (double t : thresholds) csv << ",hit_rate_t" << t << ",latency_ms_t" << t;
  csv << "\n";
  for (std::size_t b = 0; b < curves[0].size(); ++b) {
    csv << b;
    for (const auto& c : curves) csv << "," << c[b].hit_rate << "," << c[b].latency_ms;
    csv << "\n";
  }
  csv.close();
  std::ofstream gp(prefix + ".gp");
  gp << "set terminal png size 1000,800\nset output '" << prefix
     << ".png'\nset datafile separator ','\n"
     << "set multiplot layout 2,1 title 'HPS warm-up (Fig. 7 analogue): Zipf 1.2, batch 1024, "
        "cache 5%'\n"
     << "set ylabel 'L1 hit rate'\nset key right bottom\nplot ";
  for (std::size_t i = 0; i < thresholds.size(); ++i)
    gp << (i ? ", " : "") << "'" << prefix << ".csv' every ::1 u 1:" << 2 + 2 * i
       << " w l t 'threshold " << thresholds[i] << "'";
  gp << "\nset ylabel 'lookup latency (ms)'\nset xlabel 'batch'\nset logscale y\nset key right "
        "top\nplot ";
  for (std::size_t i = 0; i < thresholds.size(); ++i)
    gp << (i ? ", " : "") << "'" << prefix << ".csv' every ::1 u 1:" << 3 + 2 * i
       << " w l t 'threshold " << thresholds[i] << "'";
  gp << "\nunset multiplot\n";
  gp.close();
  if (auto p = child_process::spawn({"/usr/bin/gnuplot", prefix + ".gp"}); p && p->wait() == 0) {
    std::printf("plot: %s.png (data %s.csv)\n", prefix.c_str(), prefix.c_str());
  } else {
    std::printf("gnuplot failed; data in %s.csv\n", prefix.c_str());
  }
}

void warm_up_section(const table& tb, const std::string& prefix) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("spindle-hps-bench-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto pdb = std::move(*hps::persistent_db::open((dir / "db").string()));
  (void)pdb->bulk_load("t", tb.values, tb.dim);
  const std::vector<double> thresholds = {0.0, 0.5, 1.0};
  std::vector<std::vector<warm_point>> curves;
  for (double t : thresholds) curves.push_back(warm_up(tb, t, *pdb, 400));
  std::printf(
      "\nwarm-up through L1 -> VDB (hash map) -> PDB (RocksDB), %llu rows, cache 5%%, batch "
      "1024\n\n",
      (unsigned long long)tb.rows);
  std::printf(
      "| batches | t=0.0 hit rate | t=0.0 ms | t=0.5 hit rate | t=0.5 ms | t=1.0 hit rate | t=1.0 "
      "ms |\n|---|---|---|---|---|---|---|\n");
  for (std::size_t b0 : {0, 10, 25, 50, 100, 200, 300}) {
    std::printf("| %zu-%zu |", b0, b0 + 9);
    for (const auto& c : curves) {
      double h = 0, l = 0;
      for (std::size_t b = b0; b < b0 + 10; ++b) {
        h += c[b].hit_rate;
        l += c[b].latency_ms;
      }
      std::printf(" %.3f | %.2f |", h / 10, l / 10);
    }
    std::printf("\n");
  }
  plot_warm_up(curves, thresholds, prefix);
  pdb.reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace spindle::bench

int main(int argc, char** argv) {
  using namespace spindle::bench;
  const auto rows = arg_or<std::uint64_t>(argc, argv, 1, 1000000);
  const auto dim = arg_or<std::uint32_t>(argc, argv, 2, 64);
  const std::string prefix = argc > 3 ? argv[3] : "hps-warmup";
  setenv("SPINDLE_PROGRESS", "0", 0);
  const table tb(rows, dim);
  throughput_section(tb);
  hit_rate_section(tb, prefix);
  const table small(rows / 5, dim);
  warm_up_section(small, prefix);
  return 0;
}
