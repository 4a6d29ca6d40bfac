// NumPy .npy files: a memory-mapped reader that validates the header and size
// before exposing typed spans, and a streaming writer that hashes as it writes
// and publishes the file atomically (temp file + rename). Readers are immutable
// and thread-safe; a writer has one owner.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/checksum.hpp"
#include "core/mapped_file.hpp"
#include "core/status.hpp"

namespace spindle {

enum class dtype { u8, i32, i64, f16, f32, f64, u32, u64, b1, i16 };

std::string_view to_string(dtype t);                      // "int32", "float16", ...
std::size_t dtype_size(dtype t);                          // bytes per element
std::string_view npy_descr(dtype t);                      // "<i4", "<f2", "|u1", ...
expected<dtype> parse_dtype_name(std::string_view name);  // inverse of to_string

/// The dtype of element type T (no other type compiles).
template <class T>
constexpr dtype dtype_of() {
  if constexpr (std::is_same_v<T, std::uint8_t>)
    return dtype::u8;
  else if constexpr (std::is_same_v<T, std::int32_t>)
    return dtype::i32;
  else if constexpr (std::is_same_v<T, std::int64_t>)
    return dtype::i64;
  else if constexpr (std::is_same_v<T, float>)
    return dtype::f32;
  else if constexpr (std::is_same_v<T, double>)
    return dtype::f64;
  else if constexpr (std::is_same_v<T, std::uint32_t>)
    return dtype::u32;
  else if constexpr (std::is_same_v<T, std::uint64_t>)
    return dtype::u64;
  else if constexpr (std::is_same_v<T, std::int16_t>)
    return dtype::i16;
  else
    static_assert(sizeof(T) == 0, "dtype_of: not an .npy element type");
}

/// A mapped, validated .npy file (C order, little-endian).
class npy_array {
 public:
  /// Maps `path` and checks magic, version, header syntax, dtype and that the
  /// data size matches the shape exactly; errors name the file and the fault.
  static expected<npy_array> open(const std::string& path);
  /// As open(), also accepting Fortran (column-major) order, as np.save(a.T)
  /// writes: for inputs the loaders read element by element (see element()).
  static expected<npy_array> open_any_order(const std::string& path);

  /// True for a Fortran-order (column-major) array.
  bool fortran_order() const { return fortran_; }
  /// Element (r, c) of a 2-D array as double, whatever the order and dtype
  /// (integers past 2^53 lose precision: use element_i64 for ids).
  double element(std::int64_t r, std::int64_t c) const;
  /// Element (r, c) of a 2-D integer (or bool) array; error naming the file and
  /// position for a value out of int64 range or a float dtype.
  expected<std::int64_t> element_i64(std::int64_t r, std::int64_t c) const;

  const std::string& path() const { return file_.path(); }
  dtype type() const { return type_; }
  const std::vector<std::int64_t>& shape() const { return shape_; }
  std::int64_t num_elements() const;
  const std::uint8_t* raw() const { return data_; }
  std::size_t byte_size() const { return bytes_; }

  /// The data as T; error naming the file when the stored dtype is not T.
  template <class T>
  expected<std::span<const T>> as() const {
    if (type_ != dtype_of<T>())
      return make_error(errc::unsupported, "{}: dtype is {}, expected {}", path(), to_string(type_),
                        to_string(dtype_of<T>()));
    return std::span<const T>(reinterpret_cast<const T*>(data_), bytes_ / sizeof(T));
  }

 private:
  mapped_file file_;
  std::size_t offset_of(std::int64_t r, std::int64_t c) const;
  dtype type_ = dtype::u8;
  bool fortran_ = false;
  std::vector<std::int64_t> shape_;
  const std::uint8_t* data_ = nullptr;
  std::size_t bytes_ = 0;
};

/// Parses the header dict of an .npy file; exposed for tests of bad headers.
struct npy_header {
  dtype type;
  std::vector<std::int64_t> shape;
  std::size_t data_offset;
  bool fortran = false;
};
expected<npy_header> parse_npy_header(const std::uint8_t* data, std::size_t size,
                                      std::string_view name);

/// Writes an .npy file in pieces; the file appears under its name only after a
/// successful close() with exactly shape-many elements written.
class npy_writer {
 public:
  static expected<npy_writer> create(const std::string& path, dtype type,
                                     std::vector<std::int64_t> shape);
  npy_writer(npy_writer&& other) noexcept;
  npy_writer& operator=(npy_writer&&) = delete;
  ~npy_writer();

  status write(const void* data, std::size_t bytes);
  template <class T>
  status write(std::span<const T> values) {
    return write(values.data(), values.size_bytes());
  }
  /// Flushes, checks the byte count, renames into place; returns the data checksum.
  expected<std::uint64_t> close();
  /// Bytes of data the declared shape needs.
  std::size_t expected_bytes() const { return expected_bytes_; }

 private:
  npy_writer() = default;
  std::string path_, tmp_path_;
  std::FILE* file_ = nullptr;
  std::size_t expected_bytes_ = 0, written_ = 0;
  checksum_stream hash_;
};

/// One-call writer for an in-memory array; returns the data checksum.
expected<std::uint64_t> write_npy(const std::string& path, dtype type,
                                  std::vector<std::int64_t> shape, const void* data);

}  // namespace spindle
