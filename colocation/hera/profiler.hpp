// The measuring half of `spindle profile` (Hera §V-B, Figs. 5-6): open-loop
// Poisson load on a worker pool, and the search for the highest arrival rate
// whose tail latency meets the SLA. The query itself is the caller's (a model's
// forward pass over a batch); nothing here knows models.
#pragma once

#include <cstdint>
#include <functional>

#include "serving/worker_pool.hpp"

namespace spindle::colocation::hera {

struct load_result {
  double offered_qps = 0, achieved_qps = 0;
  double tail_ms = 0;  // at the percentile asked for, arrival to completion
  std::size_t queries = 0;
};

/// Poisson arrivals at `rate` per second for `seconds` into `pool`; each runs
/// `query`. Latency counts from the scheduled arrival (queueing included).
load_result run_poisson(serving::worker_pool& pool, const std::function<void()>& query, double rate,
                        double seconds, double percentile, std::uint64_t seed);

/// Queries per second `workers` threads complete back to back (the closed-loop
/// capacity that bounds the search).
double closed_loop_qps(const std::function<void()>& query, int workers, double seconds);

/// The highest rate in (0, upper] that meets the SLA: `measure(rate)` must have
/// tail <= sla_ms (the tail counts from each query's scheduled arrival, so a
/// pool falling behind shows in it) and have answered something. Bisects
/// `steps` times; 0 when even upper / 2^steps fails.
double max_qps_meeting_sla(const std::function<load_result(double)>& measure, double sla_ms,
                           double upper, int steps);

}  // namespace spindle::colocation::hera
