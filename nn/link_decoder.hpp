// How a link-prediction model (model.toml task = "link") turns a pair of node
// embeddings into the pair's score: its `decoder`, "dot" (z_u . z_v, as PyG's
// link-prediction examples decode). The pipeline runs the encoder over both
// ends' sampled neighbourhoods and calls this on the pairs' rows.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "core/status.hpp"
#include "nn/tensor.hpp"

namespace spindle::nn {

/// out[i] = the score of pair i, whose ends are z's rows rows[2i] and rows[2i+1];
/// `out` holds rows.size() / 2 values. Refuses an odd row count or an unknown
/// decoder by name.
status score_pairs(std::string_view decoder, const tensor& z, std::span<const std::int32_t> rows,
                   float* out);

}  // namespace spindle::nn
