// GNNSched's memory slot for one prepared batch: the PMC estimate of its largest
// forward pass (activations, without the weights and inputs it reads in place),
// and on a GPU also the features and CSR the pass uploads into the slot.
#pragma once

#include <cstdint>

#include "serving/gnn_pipeline.hpp"

namespace spindle::colocation {

/// The bytes the prepared batch's largest forward pass needs, at least 4 KiB.
std::uint64_t task_bytes(const serving::gnn_pipeline& pipeline, const serving::prepared_batch& pb);

}  // namespace spindle::colocation
