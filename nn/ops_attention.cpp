// Attention-style aggregations over a sampled block (GATv2Conv, TransformerConv,
// ResGatedGraphConv): a softmax over each dst's incoming edges, and the gated
// sum. Rows of dst nodes are independent, so chunks of them run on the pool.
#include <cmath>
#include <vector>

#include "nn/ops.hpp"

namespace spindle::nn {
namespace {

constexpr std::int64_t kAttendGrain = 32;

}  // namespace

expected<tensor> attend(allocator& a, const block& b, const tensor& v, int heads,
                        const gpu::attention_inputs& in, bool self_loops, thread_pool* pool) {
  return attend(a, b, v, heads, in, self_loops, edge_terms{}, pool);
}

expected<tensor> attend(allocator& a, const block& b, const tensor& v, int heads,
                        const gpu::attention_inputs& in, bool self_loops, const edge_terms& edges,
                        thread_pool* pool) {
  const std::int64_t hc = v.cols(), c = hc / heads;
  if (heads <= 0 || c * heads != hc || in.hc != hc || in.c != c)
    return make_error(errc::internal, "attend: {} columns do not split into {} heads of {}", hc,
                      heads, in.c);
  const tensor* er = edges.rows;
  if (er && (er->cols() != hc || er->rows() < b.indptr[b.num_dst]))
    return make_error(errc::internal, "attend: {} edge rows of {} columns for {} edges of {}",
                      er->rows(), er->cols(), b.indptr[b.num_dst], hc);
  SPINDLE_ASSIGN_OR_RETURN(auto out, tensor::zeros(a, {b.num_dst, hc}));
  for_row_chunks(pool, b.num_dst, kAttendGrain, [&](std::int64_t lo, std::int64_t hi) {
    std::vector<std::int64_t> src;
    std::vector<const float*> erow;  // each source's edge row (null: no edge attributes)
    std::vector<float> logit, loop;  // loop: the self-loop's edge row, the mean of the others
    for (std::int64_t i = lo; i < hi; ++i) {
      // i's sources in gpu::attend_element's order: its edges (without i->i when
      // self_loops), then the self-loop.
      src.clear();
      erow.clear();
      for (std::int64_t e = b.indptr[i]; e < b.indptr[i + 1]; ++e)
        if (!self_loops || b.indices[e] != i) {
          src.push_back(b.indices[e]);
          erow.push_back(er ? er->row(e) : nullptr);
        }
      if (self_loops) {
        if (er) {
          loop.assign(std::size_t(hc), 0.0f);
          for (const float* r : erow)
            for (std::int64_t q = 0; q < hc; ++q) loop[q] += r[q] / float(erow.size());
        }
        src.push_back(i);
        erow.push_back(er ? loop.data() : nullptr);
      }
      if (src.empty()) continue;
      float* o = out.row(i);
      logit.resize(src.size());
      for (int k = 0; k < heads; ++k) {
        float mx = 0;
        for (std::size_t t = 0; t < src.size(); ++t) {
          logit[t] = gpu::attention_logit(in, i, src[t], k, erow[t]);
          mx = t == 0 || logit[t] > mx ? logit[t] : mx;
        }
        double sum = 0;
        for (std::size_t t = 0; t < src.size(); ++t) sum += std::exp(double(logit[t] - mx));
        for (std::size_t t = 0; t < src.size(); ++t) {
          const float w = float(std::exp(double(logit[t] - mx)) / sum);
          const float* x = v.row(src[t]) + k * c;
          const float* ek = edges.in_values && erow[t] ? erow[t] + k * c : nullptr;
          for (std::int64_t q = 0; q < c; ++q) o[k * c + q] += w * (x[q] + (ek ? ek[q] : 0.0f));
        }
      }
    }
  });
  return out;
}

expected<tensor> gated_sum(allocator& a, const block& b, const tensor& k, const tensor& q,
                           const tensor& v, thread_pool* pool) {
  const std::int64_t c = v.cols();
  if (k.cols() != c || q.cols() != c)
    return make_error(errc::internal, "gated_sum: widths {}, {}, {} differ", k.cols(), q.cols(), c);
  SPINDLE_ASSIGN_OR_RETURN(auto out, tensor::zeros(a, {b.num_dst, c}));
  for_row_chunks(pool, b.num_dst, kAttendGrain, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; ++i) {
      float* o = out.row(i);
      const float* ki = k.row(i);
      for (std::int64_t e = b.indptr[i]; e < b.indptr[i + 1]; ++e) {
        const float* qj = q.row(b.indices[e]);
        const float* vj = v.row(b.indices[e]);
        for (std::int64_t r = 0; r < c; ++r) o[r] += gpu::sigmoid_gate(ki[r], qj[r]) * vj[r];
      }
    }
  });
  return out;
}

}  // namespace spindle::nn
