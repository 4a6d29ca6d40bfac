// The KServe v2 door over the serving system: model metadata and readiness,
// and an infer request turned into the gateway's GNN or recommendation call
// (same admission control, batcher and metrics as Cap'n Proto calls) and its
// answer into output tensors. Shared by the HTTP/REST and gRPC servers; knows
// neither. Thread-safe (the rpc_service is).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "transport/kserve/tensor.hpp"
#include "transport/rpc/rpc_types.hpp"

namespace spindle::transport::kserve {

struct tensor_metadata {
  std::string name, datatype;
  std::vector<std::int64_t> shape;  // -1: any size
  bool optional = false;
};

struct model_metadata {
  std::string name, platform;
  std::vector<std::string> versions;
  std::vector<tensor_metadata> inputs, outputs;
  /// Triton config parameters (string values): "table_rows" of a recommendation
  /// model ("100000,20000,..."), so a load generator can draw valid keys.
  std::map<std::string, std::string> parameters;
};

/// What an infer request came to: ok with a response, or a status and message.
struct infer_outcome {
  rpc::rpc_status status = rpc::rpc_status::ok;
  bool not_found = false;  // unknown model or version (HTTP 404, gRPC NOT_FOUND)
  std::string message;
  infer_response response;
};

/// The HTTP status of an outcome: 200, 400, 404, 503 (overloaded, unavailable),
/// 504 (deadline), 401 (unauthorized), 500.
int http_status_of(const infer_outcome& o);

/// The tensors a model takes and gives: GNN models `seeds` INT64 [-1] (or
/// `seed_ids` BYTES [-1], the data's own ids) and `output` FP32 [-1, width];
/// recommendation models `dense` FP32 [-1, dense_in], per table T either
/// `indices_T` INT64 [-1] + `offsets_T` INT64 [-1] (batch + 1, as
/// torch.nn.EmbeddingBag) or `sparse_T` INT64 [-1, lookups], and `scores` FP32 [-1].
model_metadata metadata_of(const rpc::model_info& m);

/// Maps `r` to a call on the model's kind. Errors (HTTP 400) name the input,
/// datatype, shape or value.
expected<rpc::gnn_call> gnn_call_of(const infer_request& r);
/// `dense_width` dense features and `tables` embedding tables: what the call's
/// route says (rpc_service::route).
expected<rpc::rec_call> rec_call_of(const infer_request& r, std::uint32_t dense_width,
                                    std::uint32_t tables);

class door {
 public:
  explicit door(rpc::rpc_service& service) : service_(service) {}

  /// The model named `name` (at `version`, when not empty: one of the versions
  /// it serves, reported as its version), or nullopt.
  std::optional<rpc::model_info> find(const std::string& name, const std::string& version);
  /// `name` at `version` is served (one lookup; find() builds the description).
  bool known(const std::string& name, const std::string& version) {
    return service_.route(name, version).has_value();
  }
  bool live() const { return true; }
  bool ready() { return service_.ready(); }
  bool model_ready(const std::string& name, const std::string& version);
  /// Runs `r` through the gateway (routed by rpc_service::route, one lookup);
  /// `done` is called once, from any thread.
  void infer(infer_request r, std::function<void(infer_outcome)> done);
  rpc::rpc_service& service() { return service_; }

 private:
  rpc::rpc_service& service_;
};

}  // namespace spindle::transport::kserve
