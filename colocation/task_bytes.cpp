#include "colocation/task_bytes.hpp"

#include <algorithm>

#include "colocation/pmc.hpp"
#include "colocation/pmc_check.hpp"

namespace spindle::colocation {

std::uint64_t task_bytes(const serving::gnn_pipeline& pipeline, const serving::prepared_batch& pb) {
  std::uint64_t bytes = 4096;
  const auto& model = pipeline.model();
  for (std::size_t k = 0; k < pb.used; ++k) {
    const auto& g = pb.groups[k];
    if (!g.ready) continue;
    const auto est = estimate_pmc(gnn_graph(model.desc(), block_sizes(g.sub)));
    const std::uint64_t outside = est.weight_bytes + g.features.size() * 4;
    if (est.pmc_bytes > outside) bytes = std::max(bytes, est.pmc_bytes - outside);
    if (const auto* device = pipeline.device())  // the slot also holds what the pass uploads
      bytes = std::max(bytes, device->slot_bytes(model, g.blocks, g.sub.hop_end.back(),
                                                 g.degree.size() * sizeof(float)));
  }
  return bytes;
}

}  // namespace spindle::colocation
