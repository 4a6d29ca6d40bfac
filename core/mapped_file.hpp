// Read-only memory map of a whole file (RAII: unmapped on destruction).
// Immutable after open; safe to read from any number of threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/status.hpp"

namespace spindle {

class mapped_file {
 public:
  /// Maps `path` read-only; empty files map to an empty view. Only regular files:
  /// a FIFO or device is refused (naming what it is), never waited on.
  static expected<mapped_file> open(const std::string& path);

  mapped_file() = default;
  mapped_file(mapped_file&& other) noexcept;
  mapped_file& operator=(mapped_file&& other) noexcept;
  ~mapped_file();

  const std::uint8_t* data() const { return data_; }
  std::size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace spindle
