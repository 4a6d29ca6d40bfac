// GNNSched's memory slot for one prepared batch: the PMC estimate of its largest
// forward pass (activations, without the weights and inputs it reads in place),
// and on a GPU also the features and CSR the pass uploads into the slot.
#pragma once

#include <cstdint>

#include "sched/serving/gnn_pipeline.hpp"

namespace spindle::sched::inline colocation {

/// The bytes the prepared batch's largest forward pass needs, at least 4 KiB.
std::uint64_t task_bytes(const gnn_pipeline& pipeline, const prepared_batch& pb);

}  // namespace spindle::sched::colocation
