#include "transport/ucx/progress_loop.hpp"

#include <pthread.h>

#include <chrono>
#include <thread>

namespace spindle::transport::ucx {

progress_loop::progress_loop(worker& w) : worker_(w), thread_([this] { run(); }) {}

progress_loop::~progress_loop() {
  stop_.store(true, std::memory_order_release);
  worker_.signal();
  thread_.join();
}

void progress_loop::run() {
  pthread_setname_np(pthread_self(), "ucx-progress");
  // Poll, and nap briefly when idle. With ucp_worker_wait (arm + epoll) UCX
  // 1.13's tcp transport segfaulted in uct_tcp_iface_progress about once in 8
  // runs of tests/transport beside a parallel data-path test; polling made it
  // rarer (1 in 30) but not gone, so the tests that churn tcp workers also run
  // under one ctest RESOURCE_LOCK (see tests/*/CMakeLists.txt).
  int idle = 0;
  while (!stop_.load(std::memory_order_acquire)) {
    if (worker_.progress()) {
      idle = 0;
    } else if (++idle > 64) {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
}

}  // namespace spindle::transport::ucx
