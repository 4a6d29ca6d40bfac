// What a model computes, as one digest: model.toml's description with its
// serving settings left out. The exporter records it in [verified] once its
// check passes, and loading refuses a file whose computation was edited since.
#pragma once

#include <string>
#include <string_view>

#include "config/model.hpp"
#include "core/status.hpp"

namespace spindle::config {

/// The [verified] key holding description_digest() as the exporter saw it.
inline constexpr std::string_view kDescriptionDigestKey = "description_xxh3_64";

/// XXH3-64 (16 hex digits) of to_toml(d) with the serving settings cleared:
/// name, fanouts (the model's and each edge type's), sampling, precision,
/// table_precision, ignore_tensors, batching and version settings, [verified].
/// Everything else (ops, types, task, decoder, pair_types, weights_crc32, widths)
/// is what the exporter's check compared with the user's module.
std::string description_digest(const model_desc& d);

/// Refuses `d` when its [verified] table records a digest that differs from
/// description_digest(d): the model was edited after the check, so the record no
/// longer holds. A description without the key passes. Errors name `origin`.
status check_verified_digest(const model_desc& d, std::string_view origin);

}  // namespace spindle::config
