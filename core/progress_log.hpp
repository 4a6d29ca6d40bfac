// Progress of a long step written to the log (a server started by a service
// manager has no terminal for core/progress's bar): one line every `period` or
// every `step_pct` percent of the total, whichever comes first. Not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace spindle {

class progress_log {
 public:
  using clock = std::chrono::steady_clock;
  /// A step named `label` counting up to `total` (> 0) `unit`s from `start`.
  progress_log(std::string label, std::uint64_t total, std::string unit,
               std::chrono::seconds period = std::chrono::seconds(10), int step_pct = 10,
               clock::time_point start = clock::now());

  /// Adds `n` done at `now`; the line to log when one is due ("label: 30% (300 of
  /// 1000 rows) in 12.0 s"), none otherwise. The last `n` never gives one: finish does.
  std::optional<std::string> advance(std::uint64_t n, clock::time_point now = clock::now());
  /// The final line ("label: 1000 rows in 31.2 s").
  std::string finish(clock::time_point now = clock::now()) const;
  /// advance(n), logging the line (log::info) when one is due.
  void advance_and_log(std::uint64_t n);

 private:
  std::string label_, unit_;
  std::uint64_t total_, count_ = 0;
  std::chrono::seconds period_;
  int step_pct_;
  clock::time_point start_, last_;
  int last_pct_ = 0;  // the percentage of the last line (a multiple of step_pct_)
};

}  // namespace spindle
