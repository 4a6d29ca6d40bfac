#include "serving/worker_pool.hpp"

#include <pthread.h>

#include <algorithm>

#include "core/thread_priority.hpp"

namespace spindle::serving {

worker_pool::worker_pool(std::size_t workers, std::string name) : name_(std::move(name)) {
  resize(workers);
}

worker_pool::~worker_pool() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

void worker_pool::submit(std::function<void()> job) {
  {
    std::lock_guard lock(mu_);
    jobs_.push_back(std::move(job));
  }
  cv_.notify_one();
}

void worker_pool::resize(std::size_t workers) {
  workers = std::max<std::size_t>(1, workers);
  std::lock_guard lock(mu_);
  target_ = workers;
  // Grow: start threads. Shrink: the newest live workers are told to leave.
  while (running_ < target_) {
    const std::size_t id = threads_.size();
    retired_.push_back(false);
    ++running_;
    threads_.emplace_back([this, id] { run(id); });
    pthread_setname_np(threads_.back().native_handle(), name_.substr(0, 15).c_str());
  }
  for (std::size_t id = retired_.size(); running_ > target_ && id-- > 0;) {
    if (retired_[id]) continue;
    retired_[id] = true;
    --running_;
  }
  cv_.notify_all();
}

std::size_t worker_pool::workers() const {
  std::lock_guard lock(mu_);
  return running_;
}

std::size_t worker_pool::queued() const {
  std::lock_guard lock(mu_);
  return jobs_.size();
}

void worker_pool::run(std::size_t id) {
  lower_to_compute_priority();
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || retired_[id] || !jobs_.empty(); });
      if (retired_[id]) return;
      if (jobs_.empty()) return;  // stopping, nothing left
      job = std::move(jobs_.front());
      jobs_.pop_front();
      ++active_;
    }
    job();
    job = nullptr;  // its captures go before the pool counts it done
    {
      std::lock_guard lock(mu_);
      --active_;
    }
    idle_cv_.notify_all();
  }
}

std::size_t worker_pool::idle_workers() const {
  std::lock_guard lock(mu_);
  const std::size_t busy = active_ + jobs_.size();
  return running_ > busy ? running_ - busy : 0;
}

void worker_pool::wait_idle() {
  std::unique_lock lock(mu_);
  idle_cv_.wait(lock, [&] { return jobs_.empty() && active_ == 0; });
}

}  // namespace spindle::serving
