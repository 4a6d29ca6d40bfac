// Quiver's workload metrics as expected visit counts (docs/datasets.md):
// PSGS Q[i] = sum_k q_k[i], q_k = W_1...W_{k-1} m_k, the expected sampled
// subgraph size of seed i; FAP P = sum_k p_k, p_k = p_0 W_1...W_k, the expected
// accesses of each node's feature per request. W_k[j,u] = min(deg j, l_k)/deg j
// for every out-neighbour u of j; m_k[j] = min(deg j, l_k). K sparse
// matrix-vector products, O(K|E|) time, O(|V|) memory per thread.
// The metrics model uniform sampling; for edge-weighted sampling they are the
// uniform approximation (inclusion probabilities under A-ES have no closed form).
// Pure functions; the pool parallelises the sweeps.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "config/sampling.hpp"
#include "core/huge_array.hpp"
#include "core/progress.hpp"
#include "core/status.hpp"
#include "core/thread_pool.hpp"
#include "graph/csr.hpp"

namespace spindle::graph {

struct workload_metrics {
  huge_array<double> psgs;       // [N] expected sampled-subgraph size per seed (seed included)
  huge_array<double> fap;        // [N] expected accesses per request
  std::vector<double> hop_mass;  // [K+1] sum_i p_k[i]: expected nodes visited at hop k
};

/// p_0 as a probability vector over nodes. For a file, each line (or .npy
/// int64/int32 element) is one observed request seed; errors name file and line.
expected<std::vector<double>> seed_probabilities(const csr_view& g,
                                                 const config::seed_distribution& dist);

/// The node ids of a seed file (int64/int32 .npy, or text: ids separated by
/// spaces, commas or lines); errors name the file and line.
expected<std::vector<std::int64_t>> read_seed_file(const std::string& path);

/// Computes PSGS and FAP for `fanouts` (-1 = all) and seed distribution p0.
/// Deterministic for a given pool size. `progress_out` (optional) counts edges swept.
expected<workload_metrics> compute_metrics(const csr_view& g, const std::vector<int>& fanouts,
                                           std::span<const double> p0, thread_pool& pool,
                                           progress* progress_out = nullptr);

/// One node's PSGS read through callbacks instead of a CSR (a changing graph:
/// graph/live_graph.hpp keeps the PSGS of the nodes a batch changed current).
/// The same Horner rule over the node's (K-1)-hop out-neighbourhood: `degree(j)`
/// is j's row length, `neighbours(j, out)` fills j's row. Visits at most
/// `budget` neighbours; returns a negative value past it.
double node_psgs(std::int64_t node, const std::vector<int>& fanouts,
                 const std::function<std::int64_t(std::int64_t)>& degree,
                 const std::function<void(std::int64_t, std::vector<std::int64_t>&)>& neighbours,
                 std::int64_t budget);

}  // namespace spindle::graph
