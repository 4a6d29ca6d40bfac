// The KServe v2 gRPC infer request that tests and benchmarks send a served
// GNN: one INT64 seed node, as raw bytes or as typed contents. Header-only;
// the includer builds against the generated grpc_service protobuf code.
#pragma once

#include <cstdint>
#include <string>

#include "grpc_service.grpc.pb.h"

namespace spindle::testing {

/// ModelInfer of `model` for node `seed`: its bytes in raw_input_contents with
/// `raw`, else in the input's int64_contents.
inline inference::ModelInferRequest seed_request(const std::string& model, std::int64_t seed,
                                                 bool raw) {
  inference::ModelInferRequest req;
  req.set_model_name(model);
  auto* in = req.add_inputs();
  in->set_name("seeds");
  in->set_datatype("INT64");
  in->add_shape(1);
  if (raw)
    req.add_raw_input_contents(reinterpret_cast<const char*>(&seed), sizeof seed);
  else
    in->mutable_contents()->add_int64_contents(seed);
  return req;
}

}  // namespace spindle::testing
