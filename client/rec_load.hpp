// The calls `spindle client load` sends to a recommendation model: batches
// drawn from the model's description (dense features N(0, 1), each table's
// keys Zipf-distributed over its rows, hot keys first, as recommendation
// traffic is) or one batch read from a JSON file (`client rec --input`'s form).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "transport/rpc/rpc_types.hpp"

namespace spindle::client {

struct rec_load_options {
  std::uint32_t batch = 256;  // samples per call
  double zipf = 1.2;          // key skew (0: uniform)
  int lookups = 1;            // keys per sample per table
  std::string input;          // a JSON batch to send instead
  std::uint64_t seed = 1;
  std::size_t distinct = 32;  // batches drawn, then sent in turn
};

/// Key rank k in [0, n) with P(k) ~ 1/(k+1)^s (inverse transform of the
/// continuous power law, floored; s = 0: uniform). `u` in [0, 1).
std::int64_t zipf_key(double u, std::int64_t n, double s);

/// Batches for model `m` (its dense width and table rows).
expected<std::vector<transport::rpc::rec_call>> rec_load_calls(const transport::rpc::model_info& m,
                                                               const std::string& name,
                                                               const rec_load_options& o);

/// {"dense": [[f, ...] per sample], "sparse": [[[key, ...] per table] per sample]}
/// ("-": stdin); errors name the file and the sample.
expected<transport::rpc::rec_call> rec_call_from_json(const std::string& path);

}  // namespace spindle::client
