// The KServe v2 inference protocol's tensors and requests as plain C++ values,
// shared by the HTTP/REST and gRPC doors: what a client sent (decoded from JSON
// lists, Triton's binary-tensor extension or gRPC's typed contents) and what
// the server answers. No HTTP, JSON or protobuf types appear here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.hpp"

namespace spindle::transport::kserve {

/// One input tensor. Integer datatypes (INT8..UINT64, BOOL) are held as int64,
/// FP16/FP32/FP64 as float, BYTES as strings; `datatype` keeps the sent name.
struct tensor {
  std::string name, datatype;
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> strings;

  /// Elements the shape promises (-1 when a dimension is negative or the product overflows).
  std::int64_t element_count() const;
  bool is_integer() const;
  bool is_float() const;
  bool is_bytes() const { return datatype == "BYTES"; }
  /// Elements held, whatever the kind.
  std::size_t size() const;
};

struct requested_output {
  std::string name;
  bool binary = false;  // Triton's binary-tensor extension: bytes after the JSON
};

struct infer_request {
  std::string model, version, id;
  std::vector<tensor> inputs;
  std::vector<requested_output> outputs;      // empty: every output
  bool binary_outputs = false;                // parameters.binary_data_output
  std::optional<std::uint64_t> timeout_us;    // parameters.timeout (Triton's, microseconds)
  std::optional<std::uint64_t> sampler_seed;  // parameters.sampler_seed
  std::uint64_t min_version = 0;              // parameters.min_version (graph updates)
  std::string node_type;                      // parameters.node_type (typed graphs)

  const tensor* input(const std::string& name) const;
};

struct output_tensor {
  std::string name, datatype = "FP32";
  std::vector<std::int64_t> shape;
  std::vector<float> data;
  bool binary = false;
};

struct infer_response {
  std::string model, version, id;
  std::vector<output_tensor> outputs;
  std::optional<std::uint64_t> graph_version;  // a GNN answer's (parameters.graph_version)
};

/// KServe datatype names this server decodes.
bool known_datatype(const std::string& name);
/// Bytes per element of a fixed-size datatype (0 for BYTES or an unknown name).
std::size_t element_bytes(const std::string& datatype);

/// Decodes `bytes` (little-endian, row-major; BYTES as 4-byte length + bytes per
/// element) into `t`'s contents by its datatype. Errors name the input.
status decode_raw(tensor& t, std::string_view bytes);

/// Checks the count of elements against the shape (errors name the input, shape and count).
status check_shape(const tensor& t);

}  // namespace spindle::transport::kserve
