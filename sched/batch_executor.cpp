#include "sched/batch_executor.hpp"

#include <algorithm>
#include <cstring>

#include "nn/ops.hpp"

namespace spindle::sched {
namespace {
// A hop's frontier is split in ranges of this many rows over the pool.
constexpr std::int64_t kSampleGrain = 32;
// Gathers below this many rows per thread stay on one thread.
constexpr std::int64_t kGatherGrain = 512;
// Rows are 256-512 B at random addresses: request a few ahead.
constexpr std::size_t kRowsAhead = 8;
}  // namespace

host_executor::host_executor(thread_pool* pool)
    : pool_(pool),
      name_(pool ? fmt::format("pooled({})", pool->slots()) : std::string("inline")) {
  if (pool_) pooled_ = std::make_unique<graph::pooled_executor>(*pool_, kSampleGrain);
}

status host_executor::sample(const graph::csr_view& g, std::span<const std::int64_t> seeds,
                             const graph::sample_options& options, graph::sampled_subgraph& out) {
  if (pooled_) return pooled_->sample_into(g, seeds, options, out);
  return inline_.sample_into(g, seeds, options, out);
}

void gather_sorted(std::span<const float> table, std::int64_t dim,
                   std::span<const std::pair<std::int64_t, std::int64_t>> order, float* out) {
  const auto bytes = std::size_t(dim) * sizeof(float);
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (i + kRowsAhead < order.size()) {
      const float* next = table.data() + order[i + kRowsAhead].first * dim;
      for (std::int64_t c = 0; c < dim; c += 16) __builtin_prefetch(next + c);
    }
    std::memcpy(out + order[i].second * dim, table.data() + order[i].first * dim, bytes);
  }
}

// Unique rows read in address order (DESIGN: sort gathers by address), each
// written to its position in the batch's feature matrix.
void host_executor::gather(std::span<const float> table, std::int64_t dim,
                           std::span<const std::int64_t> ids, float* out) {
  order_.resize(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) order_[i] = {ids[i], std::int64_t(i)};
  std::sort(order_.begin(), order_.end());
  nn::for_row_chunks(pool_, std::int64_t(order_.size()), kGatherGrain,
                     [&](std::int64_t lo, std::int64_t hi) {
                       gather_sorted(table, dim, {order_.data() + lo, std::size_t(hi - lo)}, out);
                     });
}

expected<nn::tensor> host_executor::forward(const nn::model& m, nn::allocator& a,
                                            std::span<const nn::block> blocks,
                                            std::span<const float> degree, const nn::tensor& x) {
  return m.forward(a, blocks, degree, x, pool_);
}

}  // namespace spindle::sched
