// Which host rows a device buffer currently mirrors, for one use: the device
// executor's gather leaves a batch's feature rows on the GPU and notes the host
// copy it wrote; the forward pass of exactly those rows (same address, same
// size) reads the device copy instead of uploading them again. Any other
// gather forgets the note, and taking it forgets it too, so a later batch whose
// rows reached the same host buffer some other way is never served stale
// device rows. Pure logic; one owner thread.
#pragma once

#include <cstddef>

namespace spindle::serving {

class device_rows_note {
 public:
  /// The device buffer now holds a copy of host [rows, rows + bytes).
  void note(const float* rows, std::size_t bytes) { rows_ = rows, bytes_ = bytes; }
  void forget() { rows_ = nullptr, bytes_ = 0; }
  /// Whether host [rows, rows + bytes) is what the device holds; forgets either way.
  bool take(const float* rows, std::size_t bytes) {
    const bool same = rows_ != nullptr && rows_ == rows && bytes_ == bytes;
    forget();
    return same;
  }

 private:
  const float* rows_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace spindle::serving
