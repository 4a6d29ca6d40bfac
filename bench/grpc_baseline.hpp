// The gRPC + protobuf baseline of the RPC-tax benchmark: a synchronous gRPC
// server on a loopback port that runs a tensor model on each request's payload,
// and a client call. Benchmark-only (bench/); the product does not use gRPC.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "actors/split_path.hpp"
#include "transport/rpc/rpc_types.hpp"

namespace spindle::bench {

class grpc_baseline {
 public:
  /// Starts the server (model `m`) on 127.0.0.1 at a free port and connects a client.
  static std::unique_ptr<grpc_baseline> start(actors::tensor_model m);
  virtual ~grpc_baseline() = default;
  /// One call; the answer as the front door's tensor_answer.
  virtual transport::rpc::tensor_answer infer(std::span<const float> payload) = 0;
  /// Client-side serialization of a request (protobuf), microseconds.
  virtual double serialization_us(std::span<const float> payload, int reps) = 0;
};

}  // namespace spindle::bench
