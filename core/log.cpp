#include "core/log.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <string>

#include "core/enum_names.hpp"

namespace spindle::log {
namespace {

level initial_level() {
  level l = level::info;
  if (const char* env = std::getenv("SPINDLE_LOG")) parse_level(env, l);
  return l;
}

std::atomic<level>& threshold() {
  static std::atomic<level> t{initial_level()};
  return t;
}

}  // namespace

constexpr enum_names<level, 5> kLevels{{{
    {level::debug, "debug"}, {level::info, "info"}, {level::warn, "warn"},
    {level::error, "error"}, {level::off, "off"}}}};

std::string_view to_string(level l) { return kLevels.name(l, "unknown"); }

bool parse_level(std::string_view text, level& out) {
  const auto l = kLevels.parse(text);
  if (l) out = *l;
  return l.has_value();
}

void set_level(level l) { threshold().store(l); }
level current_level() { return threshold().load(std::memory_order_relaxed); }

void write(level l, std::string_view message) {
  using namespace std::chrono;
  auto now = system_clock::now();
  std::time_t secs = system_clock::to_time_t(now);
  auto millis = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char tag = "DIWEO"[static_cast<int>(l)];
  std::string line = fmt::format("[{} {:02}:{:02}:{:02}.{:03}] {}\n", tag, tm.tm_hour, tm.tm_min,
                                 tm.tm_sec, millis, message);
  // One write(2) per line keeps concurrent lines whole.
  [[maybe_unused]] auto n = ::write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace spindle::log
