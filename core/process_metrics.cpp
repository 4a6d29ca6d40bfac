#include "core/process_metrics.hpp"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace spindle {
namespace {

struct proc_stat {
  double cpu_s = 0, start_s = 0;
  double virtual_bytes = 0, resident_bytes = 0;
  bool ok = false;
};

// /proc/self/stat fields 14-15 (utime, stime), 22 (starttime, ticks after
// boot), 23 (vsize), 24 (rss pages); the boot time from /proc/stat's btime.
proc_stat read_stat() {
  proc_stat p;
  std::ifstream f("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) return p;
  std::istringstream rest(text.substr(close + 2));
  std::string field[24];  // fields 3.. (state is field 3)
  for (auto& x : field) rest >> x;
  const double hz = double(::sysconf(_SC_CLK_TCK));
  const double page = double(::sysconf(_SC_PAGESIZE));
  try {
    p.cpu_s = (std::stod(field[11]) + std::stod(field[12])) / hz;  // fields 14, 15
    const double start_ticks = std::stod(field[19]);               // field 22
    p.virtual_bytes = std::stod(field[20]);                        // field 23
    p.resident_bytes = std::stod(field[21]) * page;                // field 24
    std::ifstream s("/proc/stat");
    for (std::string key; s >> key;) {
      if (key == "btime") {
        double btime = 0;
        s >> btime;
        p.start_s = btime + start_ticks / hz;
        break;
      }
    }
    p.ok = true;
  } catch (const std::exception&) {
  }
  return p;
}

std::size_t open_fds() {
  std::error_code ec;
  std::size_t n = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++n;
  return n;
}

}  // namespace

std::string process_metrics_text() {
  const auto p = read_stat();
  if (!p.ok) return {};
  rlimit fds{};
  ::getrlimit(RLIMIT_NOFILE, &fds);
  std::string out;
  auto series = [&](const char* name, const char* type, const char* help, double value) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name, type, name, value);
  };
  series("process_cpu_seconds_total", "counter", "User and system CPU time spent, seconds.",
         p.cpu_s);
  series("process_resident_memory_bytes", "gauge", "Resident memory size, bytes.",
         p.resident_bytes);
  series("process_virtual_memory_bytes", "gauge", "Virtual memory size, bytes.", p.virtual_bytes);
  series("process_open_fds", "gauge", "Open file descriptors.", double(open_fds()));
  series("process_max_fds", "gauge", "Maximum number of open file descriptors.",
         double(fds.rlim_cur));
  series("process_start_time_seconds", "gauge", "Start time since the Unix epoch, seconds.",
         p.start_s);
  return out;
}

}  // namespace spindle
