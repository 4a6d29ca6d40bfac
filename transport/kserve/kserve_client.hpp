// A C++ client of Spindle's KServe v2 doors, over HTTP (with Triton's
// binary-tensor extension, as perf_analyzer sends) or gRPC, speaking the front
// door's own call types: a GNN call or a recommendation call becomes one
// ModelInfer request, and the answer or refusal a gnn_answer / rec_answer with
// the rpc_status the door meant. One connection per instance, synchronous
// calls, one owner thread. Used by `spindle client load --door http|grpc`.
#pragma once

#include <memory>
#include <string>

#include "core/status.hpp"
#include "transport/rpc/rpc_types.hpp"

namespace spindle::transport::kserve {

class door_client {
 public:
  virtual ~door_client() = default;
  virtual rpc::gnn_answer infer_gnn(const rpc::gnn_call& call) = 0;
  virtual rpc::rec_answer infer_rec(const rpc::rec_call& call) = 0;
  /// What `model` takes, from Triton's model configuration (kind "gnn" when
  /// it takes seeds, else "rec" with its dense width, tables and table rows).
  virtual expected<rpc::model_info> describe(const std::string& model) = 0;
  virtual const std::string& endpoint() const = 0;
};

/// "HOST:PORT" of a KServe HTTP door; `timeout_ms` bounds every call. Fails
/// (naming the endpoint) when nothing answers /v2/health/live.
expected<std::unique_ptr<door_client>> connect_http(const std::string& endpoint, int timeout_ms);
/// "HOST:PORT" of a KServe gRPC door; fails when ServerLive does not answer.
expected<std::unique_ptr<door_client>> connect_grpc(const std::string& endpoint, int timeout_ms);

/// The rpc_status an HTTP status of the door means (429: overloaded, ...).
rpc::rpc_status status_of_http(int http_status);

}  // namespace spindle::transport::kserve
