// The payload of a recommendation request on the tensor path (SplitRPC's data
// path carries bytes, not Cap'n Proto structs): 32-bit words, little-endian —
// magic "REC1", batch, dense_in, tables; batch x dense_in float32; then per
// table batch + 1 int64 offsets and offsets[batch] int64 keys. Pure logic.
#pragma once

#include <span>
#include <vector>

#include "core/status.hpp"
#include "serving/rec_batch.hpp"

namespace spindle::splitrpc {

inline constexpr std::uint32_t kRecWireMagic = 0x31434552;  // "REC1"

/// Packs one request (dense batch x dense_in, one bag list per table).
std::vector<float> pack_rec_request(std::int64_t batch, std::span<const float> dense,
                                    std::span<const nn::sparse_input> sparse);

/// Unpacks and checks a payload for a model of `dense_in` features and `tables`
/// tables: every size, the offsets (0, non-decreasing, ending at the key count)
/// and the payload's exact length. Errors name the field and value.
expected<serving::rec_batch_input> unpack_rec_request(std::span<const float> words, std::int64_t dense_in,
                                             std::size_t tables);

}  // namespace spindle::splitrpc
