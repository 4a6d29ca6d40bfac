// Hera's decisions over a profile table (Hera §VI-B, §VI-C): worker
// scalability, co-location affinity (Algorithm 1), the cluster planner
// (Algorithm 2) and the node resource manager's worker and LLC choices
// (Algorithm 3). Pure functions; the choices where the paper is vague are
// stated at each declaration and tested in tests/colocation/hera_test.cpp.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "colocation/hera/profile.hpp"

namespace spindle::colocation::hera {

enum class scalability { low, high };
std::string_view to_string(scalability s);

/// Hera §VI-B "the slope of the performance scalability curve", made concrete:
/// W = the machine's cores; the gain of the upper half of the workers,
/// (QPS[W] - QPS[W/2]) / QPS[W/2] at all ways, is 1.0 when QPS doubles
/// (linear). High when the gain reaches `min_gain`; low otherwise, and low when
/// the profile stops before W workers (memory-capacity bound, as DLRM(B)).
/// The default 0.6 makes a model saturating at 12 of 16 workers low, as Hera
/// classifies DLRM(D) (gain 0.5), while one saturating at 14 stays high (DLRM(A)).
inline constexpr double kDefaultMinGain = 0.6;
scalability worker_scalability(const model_profile& m, int cores,
                               double min_gain = kDefaultMinGain);

/// Algorithm 1's result for a pair (A, B) sharing one machine, each with half
/// of its cores as workers.
struct affinity {
  double llc = 1, dram = 1, system = 1;
  int ways_a = 1, ways_b = 1;  // the best way split (both the whole LLC without CAT)
};

/// Algorithm 1. Step A: for ways i = 1..ways-1 (the slip noted in the seeds
/// README: no model gets 0 ways), the mean over A and B of QPS at its ways
/// normalized to QPS at all ways; the best split is kept. With one way (no
/// resctrl/CAT: the LLC cannot be split) both share it and CoAff_LLC = 1.
/// Step B: CoAff_DRAM = min(MemBW_system / (MemBW_A + MemBW_B), 1), bandwidths
/// at half the cores. Step C: the minimum of the two.
affinity co_location_affinity(const model_profile& a, const model_profile& b,
                              const machine_profile& m);

/// Expected QPS of each model of a co-located pair (Algorithm 2's qps_mi and
/// qps_mj): half the cores each, at Algorithm 1's best way split, scaled by
/// CoAff_DRAM (the share of bandwidth each can expect).
std::pair<double, double> colocated_qps(const model_profile& a, const model_profile& b,
                                        const machine_profile& m);

/// Max QPS of `m` alone on the machine: the best worker count up to its cores
/// (Hera's "maximum workers spawned"; a bandwidth-bound model may peak earlier).
double isolated_qps(const model_profile& m, const machine_profile& machine);

struct server_plan {
  std::vector<std::string> models;  // one (alone) or two (co-located)
  std::vector<double> qps;          // expected QPS of each
  double emu = 0;                   // Σ qps / isolated_qps (Hera §VII's EMU)
};

struct cluster_plan {
  std::vector<server_plan> servers;
  std::map<std::string, double> serviced;  // expected QPS per model
  std::map<std::string, scalability> classes;
};

/// Algorithm 2. Step A: for each low-scalability model (by name), while its
/// target is not served, a new server co-locates it with the high-scalability
/// model of highest system affinity (ties: the first by name), adding each
/// one's co-located QPS. Step B: each high-scalability model still short of
/// its target gets servers of its own. Without any high model, low models run
/// alone too. Errors name a target for an unknown model or a model that
/// serves 0 QPS.
expected<cluster_plan> plan_cluster(const profile_table& t,
                                    const std::map<std::string, double>& target_qps,
                                    double min_gain = kDefaultMinGain);

/// Algorithm 3's find_number_of_workers: the fewest workers (up to
/// `max_workers`) whose profiled QPS at `ways` reaches `traffic`; the most QPS
/// otherwise.
int find_number_of_workers(const model_profile& m, double traffic, int ways, int max_workers);

/// The SLA slack band inside which Algorithm 3 leaves a model alone.
struct slack_band {
  double low = 0.8, high = 1.0;
};

/// Algorithm 3's adjust phase for one model: slack = tail / SLA; inside the
/// band the workers stay; else urgency = max(1, slack) scales the observed
/// traffic and find_number_of_workers sizes the pool.
int adjust_workers(const model_profile& m, double tail_ms, double traffic_qps, int current,
                   int ways, int max_workers, slack_band band = {});

/// Algorithm 3's adjust_LLC_partition: the split (i, ways - i), i = 1..ways-1,
/// with the highest summed QPS at the given workers; (ways, ways) with one way.
std::pair<int, int> best_llc_partition(const model_profile& a, int workers_a,
                                       const model_profile& b, int workers_b, int ways);

}  // namespace spindle::colocation::hera
