#include "colocation/hera/profiler.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

namespace spindle::colocation::hera {
namespace {

using clock_type = std::chrono::steady_clock;

}  // namespace

load_result run_poisson(serving::worker_pool& pool, const std::function<void()>& query, double rate,
                        double seconds, double percentile, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(rate);
  std::mutex mu;
  std::vector<double> latencies;
  std::atomic<std::size_t> done{0};
  std::size_t sent = 0;
  const auto t0 = clock_type::now();
  double at = 0;
  for (at = gap(rng); at < seconds; at += gap(rng)) {
    const auto when =
        t0 + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(at));
    std::this_thread::sleep_until(when);
    ++sent;
    pool.submit([&, when] {
      query();
      const double ms = std::chrono::duration<double, std::milli>(clock_type::now() - when).count();
      {
        std::lock_guard lock(mu);
        latencies.push_back(ms);
      }
      ++done;
    });
  }
  while (done.load() < sent) std::this_thread::sleep_for(std::chrono::microseconds(200));
  const double wall = std::chrono::duration<double>(clock_type::now() - t0).count();
  load_result r{rate, double(sent) / std::max(wall, seconds), 0, sent};
  if (!latencies.empty()) {
    std::sort(latencies.begin(), latencies.end());
    r.tail_ms = latencies[std::min(latencies.size() - 1,
                                   std::size_t(percentile * double(latencies.size())))];
  }
  return r;
}

double closed_loop_qps(const std::function<void()>& query, int workers, double seconds) {
  std::atomic<std::size_t> n{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  const auto t0 = clock_type::now();
  for (int w = 0; w < workers; ++w)
    threads.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        query();
        ++n;
      }
    });
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : threads) t.join();
  return double(n.load()) / std::chrono::duration<double>(clock_type::now() - t0).count();
}

double max_qps_meeting_sla(const std::function<load_result(double)>& measure, double sla_ms,
                           double upper, int steps) {
  auto meets = [&](double rate) {
    const load_result r = measure(rate);
    // Not also "achieved >= 95% of offered": over short windows the last
    // queries' drain time alone would fail it on a busy machine.
    return r.queries > 0 && r.tail_ms <= sla_ms;
  };
  if (upper <= 0) return 0;
  if (meets(upper)) return upper;
  double lo = 0, hi = upper;
  for (int i = 0; i < steps; ++i) {
    const double mid = (lo + hi) / 2;
    (meets(mid) ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace spindle::colocation::hera
