#include "serving/cuda_sampling.hpp"

#include <cstring>

#include "gpu/gnn_kernels.hpp"
#include "gpu/kernels/sample_draw.hpp"

namespace spindle::serving {

expected<std::shared_ptr<const device_csr>> device_csr::create(const graph::csr_view& g) {
  if (g.wide()) return make_error(errc::unsupported, "cuda sampling: graphs of 2^31 nodes or more");
  std::shared_ptr<device_csr> csr(new device_csr);
  const std::size_t ptr_bytes = g.indptr.size_bytes(), idx_bytes = g.indices32.size_bytes();
  SPINDLE_ASSIGN_OR_RETURN(csr->indptr_, gpu::device_alloc(ptr_bytes));
  SPINDLE_ASSIGN_OR_RETURN(csr->indices_, gpu::device_alloc(idx_bytes));
  SPINDLE_TRY(gpu::copy_to_device(csr->indptr_, g.indptr.data(), ptr_bytes));
  SPINDLE_TRY(gpu::copy_to_device(csr->indices_, g.indices32.data(), idx_bytes));
  csr->num_nodes_ = g.num_nodes;
  return std::shared_ptr<const device_csr>(std::move(csr));
}

device_csr::~device_csr() {
  gpu::device_free(indptr_);
  gpu::device_free(indices_);
}

expected<std::unique_ptr<cuda_sampling_executor>> cuda_sampling_executor::create(
    const graph::csr_view& g) {
  SPINDLE_ASSIGN_OR_RETURN(auto csr, device_csr::create(g));
  return create(std::move(csr));
}

expected<std::unique_ptr<cuda_sampling_executor>> cuda_sampling_executor::create(
    std::shared_ptr<const device_csr> csr) {
  std::unique_ptr<cuda_sampling_executor> ex(new cuda_sampling_executor);
  ex->csr_ = std::move(csr);
  SPINDLE_ASSIGN_OR_RETURN(ex->arena_, gpu::device_arena::create(std::size_t(64) << 20));
  return ex;
}

status cuda_sampling_executor::draw_hop(std::span<const std::int64_t> frontier, int hop, int fanout,
                                        std::uint64_t seed, std::vector<std::int64_t>& globals,
                                        std::vector<std::int64_t>& row_sizes) {
  const auto rows = std::int64_t(frontier.size());
  if (rows == 0) return status::ok();
  // Frontier in, fanout slots and a count per row out, from the hop's arena.
  arena_->reset();
  SPINDLE_ASSIGN_OR_RETURN(auto* d_frontier, arena_->take_n<std::int64_t>(frontier.size()));
  SPINDLE_ASSIGN_OR_RETURN(auto* out,
                           arena_->take_n<std::int64_t>(std::size_t(rows) * (fanout + 1)));
  // Up, draw, down on the hop's stream through pinned buffers: one wait per hop.
  void* const stream = arena_->stream();
  SPINDLE_ASSIGN_OR_RETURN(void* up, staging_up_.reserve(frontier.size_bytes()));
  std::memcpy(up, frontier.data(), frontier.size_bytes());
  SPINDLE_TRY(gpu::copy_to_device_async(d_frontier, up, frontier.size_bytes(), stream));
  SPINDLE_TRY(gpu::sample_hop_async({csr_->indptr(), csr_->indices(), csr_->num_nodes()},
                                    d_frontier, rows, fanout, seed, hop, out, out + rows * fanout,
                                    stream));
  const std::size_t words = std::size_t(rows) * (fanout + 1);
  SPINDLE_ASSIGN_OR_RETURN(void* pinned, staging_.reserve(words * 8));
  SPINDLE_TRY(gpu::copy_to_host_async(pinned, out, words * 8, stream));
  SPINDLE_TRY(gpu::synchronize(stream));
  const auto* host = static_cast<const std::int64_t*>(pinned);
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t n = host[rows * fanout + r];
    globals.insert(globals.end(), host + r * fanout, host + r * fanout + n);
    row_sizes.push_back(n);
  }
  return status::ok();
}

status cuda_sampling_executor::sample_into(const graph::csr_view& g,
                                           std::span<const std::int64_t> seeds,
                                           const graph::sample_options& o,
                                           graph::sampled_subgraph& out) {
  if (o.weighted) return make_error(errc::unsupported, "cuda sampling: weighted draws");
  for (int f : o.fanouts)
    if (f < 1 || f > gpu::kMaxFloydFanout)
      return make_error(errc::unsupported, "cuda sampling: fanout {} (the device draws 1..{})", f,
                        gpu::kMaxFloydFanout);
  if (g.delta)  // the device holds the base graph: its rows would miss the changes
    return make_error(errc::unsupported,
                      "cuda sampling: a graph with live updates (the device holds the base graph)");
  if (g.num_nodes != csr_->num_nodes())
    return make_error(errc::invalid_argument, "cuda sampling: graph of {} nodes, device holds {}",
                      g.num_nodes, csr_->num_nodes());
  return graph::sample_with_drawer(
      g, seeds, o,
      [&](std::span<const std::int64_t> frontier, int hop, int fanout,
          std::vector<std::int64_t>& globals, std::vector<std::int64_t>& row_sizes) {
        return draw_hop(frontier, hop, fanout, o.seed, globals, row_sizes);
      },
      out);
}

}  // namespace spindle::serving
