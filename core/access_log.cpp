#include "core/access_log.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "core/log.hpp"

namespace spindle {

expected<std::shared_ptr<access_log>> access_log::open(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "ae");
  if (!f)
    return make_error(errc::io_error, "--access-log {}: cannot open: {}", path,
                      std::strerror(errno));
  std::setvbuf(f, nullptr, _IOFBF, 1 << 16);
  return std::shared_ptr<access_log>(new access_log(f, path));
}

access_log::access_log(std::FILE* f, std::string path)
    : f_(f), path_(std::move(path)), flusher_([this] { flush_every_second(); }) {}

access_log::~access_log() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  flusher_.join();
  std::fflush(f_);
  std::fclose(f_);
}

// Lines written while calls come are flushed by the next write a second on;
// the last ones before a pause, by this loop within a second.
void access_log::flush_every_second() {
  std::unique_lock lock(mu_);
  while (!stop_cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_; })) {
    if (!dirty_) continue;
    std::fflush(f_);
    dirty_ = false;
    last_flush_ = std::chrono::steady_clock::now();
  }
}

void access_log::write(std::string_view door, std::string_view model, std::string_view kind,
                       std::size_t items, std::string_view status, double latency_ms) {
  const auto now = std::chrono::system_clock::now();
  const std::time_t secs = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()) %
                  1000;
  std::tm utc{};
  gmtime_r(&secs, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &utc);
  const std::string line =
      fmt::format("{}.{:03d}Z door={} model={} kind={} items={} status={} ms={:.3f}\n", stamp,
                  int(ms.count()), door.empty() ? "-" : door, model.empty() ? "-" : model, kind,
                  items, status, latency_ms);
  std::lock_guard lock(mu_);
  if (std::fwrite(line.data(), 1, line.size(), f_) != line.size() && !failed_) {
    failed_ = true;
    log::warn("--access-log {}: write failed ({}); serving goes on", path_, std::strerror(errno));
  }
  dirty_ = true;
  const auto t = std::chrono::steady_clock::now();
  if (t - last_flush_ >= std::chrono::seconds(1)) {
    std::fflush(f_);
    dirty_ = false;
    last_flush_ = t;
  }
}

}  // namespace spindle
