// Progress display for long steps (prepare, generate, metrics): a bar redrawn
// in place when stderr is a terminal, plain periodic lines otherwise, nothing
// when disabled (SPINDLE_PROGRESS=0 or set_progress_enabled(false)).
// Thread-safe: advance() may be called from many threads at once.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace spindle {

/// Globally enables or disables progress output (e.g. for --json runs).
void set_progress_enabled(bool enabled);

class progress {
 public:
  /// Starts a step named `label` that will count up to `total` `unit`s (0: unknown).
  progress(std::string label, std::uint64_t total, std::string unit = "items");
  ~progress();
  progress(const progress&) = delete;
  progress& operator=(const progress&) = delete;

  /// Adds `n` to the count and redraws at most every 100 ms (terminal) or 5 s (log).
  void advance(std::uint64_t n);
  /// Prints the final line ("label: 100% ... in 1.2 s"); idempotent.
  void finish();

 private:
  void render(bool final_line);

  std::string label_;
  std::string unit_;
  std::uint64_t total_;
  std::atomic<std::uint64_t> count_{0};
  std::chrono::steady_clock::time_point start_;
  std::atomic<std::int64_t> last_render_ns_{0};
  std::mutex render_mu_;
  bool enabled_;
  bool tty_;
  bool finished_ = false;
};

}  // namespace spindle
