// How a link-prediction model (model.toml task = "link") turns a pair of node
// embeddings into the pair's score: its `decoder`, "dot" (z_u . z_v, as PyG's
// link-prediction examples decode) or "ops" (the model's decoder ops on the two
// embeddings, an MLP on their concatenation, say). The pipeline runs the encoder
// over both ends' sampled neighbourhoods and calls this on the pairs' rows.
#pragma once

#include <cstdint>
#include <span>

#include "core/status.hpp"
#include "nn/arena.hpp"
#include "nn/model.hpp"
#include "nn/tensor.hpp"

namespace spindle::nn {

/// out[i] = the score of pair i, whose ends are z's rows rows[2i] and rows[2i+1],
/// by m's decoder; `out` holds rows.size() / 2 values. Refuses an odd row count
/// or a decoder it does not know by name.
status score_pairs(const model& m, allocator& a, const tensor& z,
                   std::span<const std::int32_t> rows, float* out);
/// As above, a pair's first end a row of `z_src`, its second one of `z_dst` (a
/// typed link model's two node types).
status score_pairs(const model& m, allocator& a, const tensor& z_src, const tensor& z_dst,
                   std::span<const std::int32_t> rows, float* out);

}  // namespace spindle::nn
