// The optional access log (`--access-log FILE`): one line per call, appended,
// with the time, the door it came through, the model, how many seeds or
// samples it carried, its status and its latency in the server. Writes are
// buffered and flushed at least once a second (by a thread of its own once
// calls stop coming), so logging stays off the call's critical path; a write
// error is reported once, and serving goes on.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "core/status.hpp"

namespace spindle {

class access_log {
 public:
  /// Opens `path` for appending (created 0644 if absent); errors name the path.
  static expected<std::shared_ptr<access_log>> open(const std::string& path);
  ~access_log();

  /// `2026-11-25T16:10:01.123Z door=capnp model=sage kind=gnn items=1 status=ok ms=0.512`
  void write(std::string_view door, std::string_view model, std::string_view kind,
             std::size_t items, std::string_view status, double latency_ms);

 private:
  access_log(std::FILE* f, std::string path);
  void flush_every_second();  // the flusher thread's loop
  std::FILE* f_;
  std::string path_;
  std::mutex mu_;
  std::condition_variable stop_cv_;
  std::chrono::steady_clock::time_point last_flush_ = std::chrono::steady_clock::now();
  bool failed_ = false;
  bool dirty_ = false;     // lines written since the last flush
  bool stopping_ = false;  // guarded by mu_
  std::thread flusher_;
};

}  // namespace spindle
