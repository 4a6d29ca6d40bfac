#include "core/progress.hpp"

#include <unistd.h>

#include <cstdlib>
#include <string_view>

#include <fmt/format.h>

namespace spindle {
namespace {

std::atomic<bool>& enabled_flag() {
  static std::atomic<bool> flag{[] {
    const char* env = std::getenv("SPINDLE_PROGRESS");
    return !(env && std::string_view(env) == "0");
  }()};
  return flag;
}

void write_stderr(const std::string& text) {
  [[maybe_unused]] auto n = ::write(STDERR_FILENO, text.data(), text.size());
}

}  // namespace

void set_progress_enabled(bool enabled) { enabled_flag().store(enabled); }

progress::progress(std::string label, std::uint64_t total, std::string unit)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      total_(total),
      start_(std::chrono::steady_clock::now()),
      enabled_(enabled_flag().load()),
      tty_(isatty(STDERR_FILENO) == 1) {}

progress::~progress() { finish(); }

void progress::advance(std::uint64_t n) {
  count_.fetch_add(n, std::memory_order_relaxed);
  if (!enabled_) return;
  auto now = std::chrono::steady_clock::now() - start_;
  std::int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now).count();
  std::int64_t period = tty_ ? 100'000'000 : 5'000'000'000;
  std::int64_t last = last_render_ns_.load(std::memory_order_relaxed);
  if (ns - last < period) return;
  if (!last_render_ns_.compare_exchange_strong(last, ns)) return;
  render(false);
}

void progress::finish() {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(render_mu_);
  if (finished_) return;
  finished_ = true;
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string prefix = tty_ ? "\r\033[K" : "";
  write_stderr(fmt::format("{}{}: {} {} in {:.2f} s\n", prefix, label_, count_.load(), unit_, secs));
}

void progress::render(bool final_line) {
  std::unique_lock<std::mutex> lock(render_mu_, std::try_to_lock);
  if (!lock.owns_lock() || finished_) return;
  std::uint64_t c = count_.load();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string line;
  if (total_ > 0) {
    double frac = std::min(1.0, static_cast<double>(c) / static_cast<double>(total_));
    int filled = static_cast<int>(frac * 30);
    line = fmt::format("{}: [{:<30}] {:5.1f}% {}/{} {} ({:.1f} s)", label_, std::string(filled, '#'),
                       frac * 100, c, total_, unit_, secs);
  } else {
    line = fmt::format("{}: {} {} ({:.1f} s)", label_, c, unit_, secs);
  }
  write_stderr(tty_ && !final_line ? "\r\033[K" + line : line + "\n");
}

}  // namespace spindle
