// Shared helpers for the benchmarks: timing, percentiles, the R-MAT graphs
// they run on, and same-run machine baselines (random reads, streaming reads).
#pragma once

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "core/thread_pool.hpp"
#include "graph/edge_list.hpp"
#include "graph/rmat.hpp"

namespace spindle::bench {

/// Positional argument `i` as a T, read as std::stod, std::stoll or std::stoull
/// read it (bad text throws), or `fallback` when there are fewer arguments.
template <class T>
T arg_or(int argc, char** argv, int i, T fallback) {
  if (argc <= i) return fallback;
  if constexpr (std::is_floating_point_v<T>)
    return T(std::stod(argv[i]));
  else if constexpr (std::is_signed_v<T>)
    return T(std::stoll(argv[i]));
  else
    return T(std::stoull(argv[i]));
}

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Nearest-rank percentile; sorts `v`.
inline double percentile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  auto i = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

/// Directed R-MAT graph (Graph500 parameters, seed 1), self-loops and repeats dropped.
inline graph::csr_graph rmat_graph(int scale, int edge_factor, thread_pool& pool) {
  graph::rmat_options o;
  o.scale = scale;
  o.edge_factor = edge_factor;
  graph::build_options b;
  b.relabel = graph::relabel_mode::never;
  b.num_nodes = std::int64_t{1} << scale;
  return graph::build_csr(graph::generate_rmat(o, pool).value(), b, &pool).value().csr;
}

/// Independent random 4-byte reads per second on one core over `words` int32s
/// (an array the size of `indices`): the memory-latency floor samplers face.
inline double random_read_rate(std::int64_t words, double min_seconds = 0.5) {
  std::vector<std::int32_t> a(static_cast<std::size_t>(words));
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<std::int32_t>(i * 2654435761u);
  std::uint64_t x = 88172645463325252ull, sum = 0, reads = 0;
  auto t0 = std::chrono::steady_clock::now();
  double dt = 0;
  while (dt < min_seconds) {
    for (int i = 0; i < (1 << 20); ++i) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      sum += static_cast<std::uint32_t>(a[((x >> 32) * static_cast<std::uint64_t>(words)) >> 32]);
    }
    reads += 1 << 20;
    dt = seconds_since(t0);
  }
  volatile std::uint64_t sink = sum;
  (void)sink;
  return static_cast<double>(reads) / dt;
}

/// CPU seconds (user + system) this process's threads have used, summed by thread name.
inline std::map<std::string, double> thread_cpu_seconds() {
  std::map<std::string, double> out;
  const double tick = double(sysconf(_SC_CLK_TCK));
  for (const auto& t : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(t.path() / "comm"), stat(t.path() / "stat");
    std::string name, line;
    std::getline(comm, name);
    std::getline(stat, line);
    std::istringstream rest(line.substr(line.rfind(')') + 2));
    std::string field;
    double user = 0, sys = 0;
    for (int i = 3; i <= 15 && rest >> field; ++i) {
      if (i == 14) user = std::stod(field);
      if (i == 15) sys = std::stod(field);
    }
    out[name] += (user + sys) / tick;
  }
  return out;
}

}  // namespace spindle::bench
