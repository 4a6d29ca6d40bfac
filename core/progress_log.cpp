#include "core/progress_log.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/log.hpp"

namespace spindle {
namespace {
double seconds(progress_log::clock::duration d) { return std::chrono::duration<double>(d).count(); }
}  // namespace

progress_log::progress_log(std::string label, std::uint64_t total, std::string unit,
                           std::chrono::seconds period, int step_pct, clock::time_point start)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      total_(std::max<std::uint64_t>(1, total)),
      period_(period),
      step_pct_(std::clamp(step_pct, 1, 100)),
      start_(start),
      last_(start) {}

std::optional<std::string> progress_log::advance(std::uint64_t n, clock::time_point now) {
  count_ += n;
  if (count_ >= total_) return std::nullopt;  // finish() says it
  const int pct = int(count_ * 100 / total_);
  const bool step = pct >= last_pct_ + step_pct_, due = now - last_ >= period_;
  if (!step && !due) return std::nullopt;
  last_ = now;
  last_pct_ = pct - pct % step_pct_;
  return fmt::format("{}: {}% ({} of {} {}) in {:.1f} s", label_, pct, count_, total_, unit_,
                     seconds(now - start_));
}

std::string progress_log::finish(clock::time_point now) const {
  return fmt::format("{}: {} {} in {:.1f} s", label_, count_, unit_, seconds(now - start_));
}

void progress_log::advance_and_log(std::uint64_t n) {
  if (auto line = advance(n)) log::info("{}", *line);
}

}  // namespace spindle
