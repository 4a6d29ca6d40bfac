#include "serving/batch_executor.hpp"

#include <algorithm>
#include <cstring>

#include "nn/ops.hpp"

namespace spindle::serving {
namespace {
// A hop's frontier is split in ranges of this many rows over the pool.
constexpr std::int64_t kSampleGrain = 32;
// Gathers below this many rows per thread stay on one thread.
constexpr std::int64_t kGatherGrain = 512;
// Rows are 256-512 B at random addresses: request a few ahead.
constexpr std::size_t kRowsAhead = 8;
}  // namespace

host_executor::host_executor(thread_pool* pool)
    : pool_(pool), name_(pool ? fmt::format("pooled({})", pool->slots()) : std::string("inline")) {
  if (pool_) pooled_ = std::make_unique<graph::pooled_executor>(*pool_, kSampleGrain);
}

status host_executor::sample(const graph::csr_view& g, std::span<const std::int64_t> seeds,
                             const graph::sample_options& options, graph::sampled_subgraph& out) {
  if (pooled_) return pooled_->sample_into(g, seeds, options, out);
  return inline_.sample_into(g, seeds, options, out);
}

void gather_rows(std::span<const float> table, std::int64_t dim, std::span<const std::int64_t> ids,
                 float* out) {
  const auto bytes = std::size_t(dim) * sizeof(float);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i + kRowsAhead < ids.size()) {
      const float* next = table.data() + ids[i + kRowsAhead] * dim;
      for (std::int64_t c = 0; c < dim; c += 16) __builtin_prefetch(next + c);
    }
    std::memcpy(out + i * dim, table.data() + ids[i] * dim, bytes);
  }
}

// Unique rows in the sample's discovery order, prefetched a few rows ahead.
// Sorting them by address first (DESIGN's habit for remote reads, which the
// cluster gatherer keeps) was measured here at 2.2x slower for local rows: the
// sort costs more than the locality gains (bench/batch_breakdown).
void host_executor::gather(std::span<const float> table, std::int64_t dim,
                           std::span<const std::int64_t> ids, float* out) {
  nn::for_row_chunks(
      pool_, std::int64_t(ids.size()), kGatherGrain, [&](std::int64_t lo, std::int64_t hi) {
        gather_rows(table, dim, ids.subspan(std::size_t(lo), std::size_t(hi - lo)), out + lo * dim);
      });
}

expected<nn::tensor> host_executor::forward(const nn::model& m, nn::allocator& a,
                                            std::span<const nn::block> blocks,
                                            std::span<const float> degree, const nn::tensor& x) {
  return m.forward(a, blocks, degree, x, pool_);
}

expected<nn::tensor> batch_executor::forward_in(device_slot, const nn::model& m, nn::allocator&,
                                                std::span<const nn::block>, std::span<const float>,
                                                const nn::tensor&) {
  return make_error(errc::unsupported, "{} executor: no device layers for {}", name(),
                    m.desc().name);
}

}  // namespace spindle::serving
