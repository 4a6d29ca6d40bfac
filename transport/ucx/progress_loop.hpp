// Drives one worker from a dedicated thread ("ucx-progress") so gets that UCX
// emulates with messages (TCP, registered memory) complete on the owner's side.
// The loop owns the worker while it runs; it sleeps in ucp_worker_wait when idle.
#pragma once

#include <atomic>
#include <thread>

#include "transport/ucx/ucx.hpp"

namespace spindle::transport::ucx {

/// Starts the progress thread on construction; stops and joins on destruction.
class progress_loop {
 public:
  explicit progress_loop(worker& w);
  progress_loop(const progress_loop&) = delete;
  progress_loop& operator=(const progress_loop&) = delete;
  ~progress_loop();

 private:
  void run();
  worker& worker_;
  std::atomic<bool> stop_{false};
  std::thread thread_;  // "ucx-progress"
};

}  // namespace spindle::transport::ucx
