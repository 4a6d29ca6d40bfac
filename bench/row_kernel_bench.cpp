// What the row kernels' dispatch gives on this CPU: the aggregation's inner
// step (o += x[u] over a block's edges, rows 64/128/256 wide, sources random
// over a table larger than L2) compiled three ways, timed in the same run in
// thread CPU time, taking turns: the x86-64 baseline alone; clones dispatched
// by `arch=haswell` (GCC picks that clone on the CPU model, so a non-Haswell
// CPU runs the baseline); clones dispatched by the x86-64-v3 feature level
// (SPINDLE_ROW_KERNEL, nn/row_kernel.hpp). Usage: row_kernel_bench [rounds]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <vector>

#include "nn/row_kernel.hpp"

namespace {

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

#define SUM_ROWS_BODY                                                              \
  for (long v = 0; v < n; ++v) {                                                   \
    float* __restrict__ o = out + v * f;                                           \
    for (long e = indptr[v]; e < indptr[v + 1]; ++e) {                             \
      const float* __restrict__ r = x + long(indices[e]) * f;                      \
      for (long c = 0; c < f; ++c) o[c] += r[c];                                   \
    }                                                                              \
  }

__attribute__((noinline)) void sum_baseline(float* out, const float* x, const long* indptr,
                                             const int* indices, long n, long f) {
  SUM_ROWS_BODY
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((noinline, target_clones("arch=haswell", "default"))) void sum_by_model(
    float* out, const float* x, const long* indptr, const int* indices, long n, long f) {
  SUM_ROWS_BODY
}
#else
void sum_by_model(float* out, const float* x, const long* indptr, const int* indices, long n,
                  long f) {
  SUM_ROWS_BODY
}
#endif

__attribute__((noinline)) SPINDLE_ROW_KERNEL void sum_by_level(float* out, const float* x,
                                                               const long* indptr,
                                                               const int* indices, long n,
                                                               long f) {
  SUM_ROWS_BODY
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 20;
  const long n = 4096, deg = 10, table = 1 << 16;
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  __builtin_cpu_init();
  std::printf("this CPU: is haswell %s, supports x86-64-v3 %s\n",
              __builtin_cpu_is("haswell") ? "yes" : "no",
              __builtin_cpu_supports("x86-64-v3") ? "yes" : "no");
#endif
  std::printf("sum aggregation, %ld rows x %ld random neighbours of %ld, thread CPU ns per "
              "neighbour row (median of %d rounds, the three taking turns)\n\n",
              n, deg, table, rounds);
  std::printf("| width | baseline | arch=haswell dispatch | x86-64-v3 dispatch | v3 / haswell "
              "dispatch |\n|---|---|---|---|---|\n");
  std::mt19937 rng(7);
  std::vector<long> indptr(std::size_t(n) + 1);
  std::vector<int> indices(std::size_t(n * deg));
  for (long v = 0; v <= n; ++v) indptr[std::size_t(v)] = v * deg;
  for (auto& u : indices) u = int(rng() % std::uint32_t(table));
  for (long f : {64L, 128L, 256L}) {
    std::vector<float> x(std::size_t(table * f), 1.0f), out(std::size_t(n * f));
    using fn = void (*)(float*, const float*, const long*, const int*, long, long);
    const fn kernels[3] = {sum_baseline, sum_by_model, sum_by_level};
    std::vector<double> ns[3];
    for (int r = 0; r < rounds; ++r)
      for (int k = 0; k < 3; ++k) {
        std::fill(out.begin(), out.end(), 0.0f);
        const double t0 = cpu_seconds();
        kernels[k](out.data(), x.data(), indptr.data(), indices.data(), n, f);
        ns[k].push_back((cpu_seconds() - t0) * 1e9 / double(n * deg));
        if (out[0] != float(deg)) return std::printf("wrong sum %f\n", double(out[0])), 1;
      }
    double med[3];
    for (int k = 0; k < 3; ++k) {
      std::sort(ns[k].begin(), ns[k].end());
      med[k] = ns[k][ns[k].size() / 2];
    }
    std::printf("| %ld | %.2f | %.2f | %.2f | %.2fx |\n", f, med[0], med[1], med[2],
                med[1] / med[2]);
  }
  return 0;
}
