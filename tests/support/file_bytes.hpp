// Damaging files on purpose: tests that a reader refuses a flipped byte (a
// checksum, a parse error naming the file) alter files in place with these.
// Header-only; the caller owns the stream.
#pragma once

#include <fstream>

namespace spindle::testing {

/// XORs the byte at `at` of `f` (opened in and out, binary) with `mask`.
inline void flip_byte(std::fstream& f, std::streamoff at, char mask) {
  f.seekg(at);
  char c = 0;
  f.read(&c, 1);
  f.seekp(at);
  c = char(c ^ mask);
  f.write(&c, 1);
}

/// The size of the file behind `f`, in bytes.
inline std::streamoff size_of(std::fstream& f) {
  f.seekg(0, std::ios::end);
  return std::streamoff(f.tellg());
}

}  // namespace spindle::testing
