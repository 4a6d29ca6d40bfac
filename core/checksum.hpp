// Content checksums for stored arrays: XXH3-64 over raw bytes, printed as 16
// lower-case hex digits. Stateless functions and a streaming hasher (one owner).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/status.hpp"

namespace spindle {

/// zlib's CRC-32 of a whole file, read in pieces, as 8 lowercase hex digits
/// (what Python's zlib.crc32 gives); errors name the file.
expected<std::string> file_crc32_hex(const std::string& path);

/// XXH3-64 of `size` bytes at `data`.
std::uint64_t checksum(const void* data, std::size_t size);
/// "0123456789abcdef" form used in metadata files.
std::string checksum_hex(std::uint64_t value);

/// Incremental XXH3-64 over bytes fed in pieces; equals checksum() of the concatenation.
class checksum_stream {
 public:
  checksum_stream();
  ~checksum_stream();
  checksum_stream(checksum_stream&&) noexcept;
  checksum_stream& operator=(checksum_stream&&) noexcept;
  void update(const void* data, std::size_t size);
  std::uint64_t digest() const;

 private:
  struct state;
  std::unique_ptr<state> state_;
};

}  // namespace spindle
