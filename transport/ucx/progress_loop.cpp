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
  // Progress until idle, then sleep in ucp_worker_wait (arm + epoll) until
  // the next event or signal().
  while (!stop_.load(std::memory_order_acquire)) {
    while (worker_.progress()) {
    }
    worker_.wait();
  }
}

}  // namespace spindle::transport::ucx
