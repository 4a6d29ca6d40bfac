// Triton's model-configuration and statistics extensions, which tritonclient's
// get_model_config / get_inference_statistics and perf_analyzer call before
// they run: a model's configuration (its tensors in Triton's types) and its
// statistics (counts and cumulative durations from the gateway's counters).
// Built once here; the HTTP and gRPC servers only render them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "transport/kserve/door.hpp"

namespace spindle::transport::kserve {

/// Triton's TYPE_* name of a KServe datatype ("INT64" -> "TYPE_INT64", "BYTES" -> "TYPE_STRING").
std::string triton_type(std::string_view datatype);
/// Triton's DataType enum value of a KServe datatype (model_config.proto).
int triton_type_code(std::string_view datatype);

struct duration_stat {
  std::uint64_t count = 0, ns = 0;
};

struct model_statistics {
  std::string name, version;
  std::uint64_t last_inference_ms = 0;  // ms since the epoch of the last answer (0: none)
  std::uint64_t inference_count = 0;    // seeds or samples answered ok
  std::uint64_t execution_count = 0;    // batches run
  duration_stat success, fail, queue, compute_infer;
};

/// The statistics of `name` (every model when empty) from the service's stats;
/// an unknown name gives none.
std::vector<model_statistics> statistics_of(rpc::rpc_service& service, const std::string& name);

/// Triton's JSON forms (HTTP): `{"name", "platform", "backend", "max_batch_size",
/// "input": [...], "output": [...]}` and `{"model_stats": [...]}`.
std::string config_json(const model_metadata& m);
std::string statistics_json(const std::vector<model_statistics>& stats);

}  // namespace spindle::transport::kserve
