// The attention layers' per-element logic (PyG GATv2Conv, TransformerConv,
// ResGatedGraphConv), shared by the host operators (nn/ops_attention.cpp and
// the layer units) and the CUDA kernels (gpu/cuda/attention_kernels.cu); the
// host tests check the elements against the host operators.
// A dst row's logits sit in slots: edge t of its CSR row at slot t, the
// appended self-loop (self_loops) at slot deg; row r's first slot is
// indptr[r] - indptr[0] + r, so (E + num_dst) x heads floats hold them all.
// With self_loops the row's own i->i edges are skipped (PyG removes them and
// adds one); the softmax sums in double, as the host does.
#pragma once

#include <cmath>
#include <cstdint>

#include "gpu/host_device.hpp"

namespace spindle::gpu {

enum class attention_score {
  gatv2,  // Σ_t att[k,t] · LeakyReLU(src[j, k,t] + dst[i, k,t]) (param: the slope)
  dot,    // param · Σ_t dst[i, k,t] · src[j, k,t] (TransformerConv: q_i · k_j / sqrt(c))
};

/// What a logit reads: per-node rows of heads * c columns for the edge's
/// source (x_l, keys) and target (x_r, queries), and GATv2's att [heads x c].
struct attention_inputs {
  const float* src = nullptr;
  const float* dst = nullptr;
  const float* att = nullptr;
  std::int64_t hc = 0, c = 0;
  float param = 0;
  attention_score mode = attention_score::gatv2;
};

/// The logit of edge j -> i for head k. `edge` (null: none) is the edge's
/// projected attributes, lin_edge(e_ji) [hc] (edge_dim): GATv2 adds them inside
/// the LeakyReLU, TransformerConv to the key.
SPINDLE_HOST_DEVICE inline float attention_logit(const attention_inputs& in, std::int64_t i,
                                                 std::int64_t j, int k,
                                                 const float* edge = nullptr) {
  const float* s = in.src + j * in.hc + k * in.c;
  const float* d = in.dst + i * in.hc + k * in.c;
  const float* e = edge ? edge + k * in.c : nullptr;
  float acc = 0;
  if (in.mode == attention_score::gatv2) {
    const float* a = in.att + k * in.c;
    for (std::int64_t t = 0; t < in.c; ++t) {
      const float x = s[t] + d[t] + (e ? e[t] : 0.0f);
      acc += a[t] * (x > 0 ? x : in.param * x);
    }
    return acc;
  }
  for (std::int64_t t = 0; t < in.c; ++t) acc += d[t] * (s[t] + (e ? e[t] : 0.0f));
  return acc * in.param;
}

SPINDLE_HOST_DEVICE inline std::int64_t attention_first_slot(const std::int64_t* indptr,
                                                             std::int64_t row) {
  return indptr[row] - indptr[0] + row;
}

/// Output element (row, col) of the softmax aggregation of v [num_src x hc] with
/// the row's slot logits [* x heads]; 0 for a row without edges.
SPINDLE_HOST_DEVICE inline float attend_element(const std::int64_t* indptr,
                                                const std::int32_t* indices, const float* logits,
                                                const float* v, std::int64_t hc, std::int64_t c,
                                                int heads, std::int64_t row, std::int64_t col,
                                                bool self_loops) {
  const int k = static_cast<int>(col / c);
  const std::int64_t lo = indptr[row], deg = indptr[row + 1] - lo;
  const float* l = logits + attention_first_slot(indptr, row) * heads + k;
  auto used = [&](std::int64_t t) { return !self_loops || indices[lo + t] != row; };
  bool any = self_loops;
  float mx = self_loops ? l[deg * heads] : 0.0f;
  for (std::int64_t t = 0; t < deg; ++t)
    if (used(t)) {
      mx = (!any || l[t * heads] > mx) ? l[t * heads] : mx;
      any = true;
    }
  if (!any) return 0.0f;
  double sum = 0;
  for (std::int64_t t = 0; t < deg; ++t)
    if (used(t)) sum += exp(static_cast<double>(l[t * heads] - mx));
  if (self_loops) sum += exp(static_cast<double>(l[deg * heads] - mx));
  float acc = 0;
  for (std::int64_t t = 0; t < deg; ++t)
    if (used(t))
      acc += static_cast<float>(exp(static_cast<double>(l[t * heads] - mx)) / sum) *
             v[indices[lo + t] * hc + col];
  if (self_loops)
    acc += static_cast<float>(exp(static_cast<double>(l[deg * heads] - mx)) / sum) * v[row * hc + col];
  return acc;
}

/// ResGatedGraphConv's gate of one message: sigmoid(k_i + q_j).
SPINDLE_HOST_DEVICE inline float sigmoid_gate(float k, float q) {
  return 1.0f / (1.0f + expf(-(k + q)));
}

/// Output element (row, col) of ResGatedGraphConv's sum over the row's edges
/// (k [num_dst x c], q and v [num_src x c]).
SPINDLE_HOST_DEVICE inline float gated_element(const std::int64_t* indptr,
                                               const std::int32_t* indices, const float* k,
                                               const float* q, const float* v, std::int64_t c,
                                               std::int64_t row, std::int64_t col) {
  float acc = 0;
  const float ki = k[row * c + col];
  for (std::int64_t e = indptr[row]; e < indptr[row + 1]; ++e) {
    const std::int64_t j = indices[e];
    acc += sigmoid_gate(ki, q[j * c + col]) * v[j * c + col];
  }
  return acc;
}

/// TransformerConv's beta gate of one row: sigmoid(w · [out, x_r, out - x_r])
/// (w is [3n], out and x_r rows of n).
SPINDLE_HOST_DEVICE inline float beta_gate(const float* out, const float* xr, const float* w,
                                           std::int64_t n) {
  float z = 0;
  for (std::int64_t q = 0; q < n; ++q)
    z += w[q] * out[q] + w[n + q] * xr[q] + w[2 * n + q] * (out[q] - xr[q]);
  return 1.0f / (1.0f + expf(-z));
}

}  // namespace spindle::gpu
