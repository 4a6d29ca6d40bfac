// safetensors files (8-byte little-endian header length, JSON header mapping
// tensor names to dtype/shape/data_offsets, raw little-endian data): a mapped
// reader that validates every entry, and a writer. Weights of PyTorch and PyG
// models arrive this way. Readers are immutable and thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/mapped_file.hpp"
#include "core/status.hpp"

namespace spindle {

/// One stored tensor: its dtype name as written ("F32", "F16", "BF16", "F64", "I64", ...),
/// shape and raw bytes inside the mapping.
struct safetensor_view {
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::span<const std::uint8_t> bytes;
  std::int64_t num_elements() const;
};

class safetensors_file {
 public:
  /// Maps `path`, parses the header and checks that every tensor's offsets lie in
  /// the data section and match its dtype and shape. Errors name file and tensor.
  static expected<safetensors_file> open(const std::string& path);

  const std::string& path() const { return file_.path(); }
  const std::map<std::string, safetensor_view>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  /// The tensor converted to float32 (from F32, F64, F16 or BF16). Errors name the
  /// tensor when it is missing, has another dtype, or its shape is not `expected`
  /// (an empty `expected` accepts any shape).
  expected<std::vector<float>> as_f32(const std::string& name,
                                      const std::vector<std::int64_t>& expected_shape) const;

 private:
  mapped_file file_;
  std::map<std::string, safetensor_view> tensors_;
  std::map<std::string, std::string> metadata_;
};

/// A float32 tensor to write.
struct safetensor_f32 {
  std::string name;
  std::vector<std::int64_t> shape;
  std::vector<float> values;
};

/// Writes `tensors` (and string metadata) to `path` atomically (temp + rename).
status write_safetensors(const std::string& path, const std::vector<safetensor_f32>& tensors,
                         const std::map<std::string, std::string>& metadata = {});

/// "[256, 128]" for error messages.
std::string format_shape(const std::vector<std::int64_t>& shape);

}  // namespace spindle
