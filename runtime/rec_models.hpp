// Recommendation models whose embedding tables live in the serving process
// (any of Hera Table I's architectures: DLRM, NCF, Wide & Deep, DIN): a model
// directory becomes a gateway binding with its own worker pool, for
// `serve --rec-model NAME=DIR` and for Admin.loadModel of such a directory.
#pragma once

#include <string>
#include <vector>

#include "actors/gateway.hpp"
#include "serving/admission.hpp"

namespace spindle::runtime {

struct rec_model_options {
  int workers = 2;  // the pool's starting workers (tunable `workers`, the node manager)
  serving::admission_options admission;
  bool slo_from_flag = false;  // --slo-ms given: it wins over model.toml's slo_ms
  std::string precision;       // --rec-precision: overrides model.toml's precision (empty: its own)
  std::string table_precision;  // --rec-table-precision: overrides model.toml's table_precision
};

/// Loads DIR (model.toml + weights, tables included) as `name` (empty: its
/// model.toml name), runs one sample through it (first touch of the weights;
/// a model that cannot run fails here, not on a client's call) and returns
/// the binding. model.toml's slo_ms (Table I's SLA for `model init` models)
/// sizes admission unless the flag was given. Errors name DIR.
expected<actors::rec_model_binding> load_rec_model(const std::string& name, const std::string& dir,
                                                   const rec_model_options& o);

/// `serve --rec-model NAME=DIR` values: each split at its first '='; errors
/// name the value.
expected<std::vector<std::pair<std::string, std::string>>> parse_rec_model_flags(
    const std::vector<std::string>& values);

}  // namespace spindle::runtime
