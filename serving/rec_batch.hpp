// Dynamic batching of recommendation calls: several calls' samples become one
// batch (dense rows stacked, each table's bags appended with shifted offsets),
// run as one forward pass, and the scores are split back per call. Pure logic
// over plain vectors; the gateway's worker pools use it (work-conserving: a
// worker takes every call queued for its model, up to a sample budget).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "nn/model.hpp"

namespace spindle::serving {

struct rec_batch_input {
  std::int64_t batch = 0;
  std::vector<float> dense;              // batch x dense_in
  std::vector<nn::sparse_input> sparse;  // one per table; offsets batch + 1
};

/// One call's samples, read in place (no copy before the merge).
struct rec_batch_view {
  std::int64_t batch = 0;
  std::span<const float> dense;
  std::span<const nn::sparse_input> sparse;
};

/// Stacks `parts` (same table count) into one batch, copying each value once.
/// Offsets of each table are shifted past the bags before them.
rec_batch_input merge_rec_batches(std::span<const rec_batch_view> parts);

/// Samples [begin, end) of `b` as a batch of their own (intra-call parallelism:
/// a large call's samples run as chunks on idle workers); offsets rebased to 0.
rec_batch_input slice_rec_batch(const rec_batch_view& b, std::int64_t begin, std::int64_t end);

/// Splits a merged batch's scores back into one vector per part, in order.
std::vector<std::vector<float>> split_scores(std::span<const float> scores,
                                             std::span<const std::int64_t> batches);

}  // namespace spindle::serving
