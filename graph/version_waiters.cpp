#include "graph/version_waiters.hpp"

#include <vector>

namespace spindle::graph {

version_waiters::~version_waiters() {
  std::vector<ready_fn> left;
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    for (auto& [when, w] : by_deadline_) left.push_back(std::move(w.ready));
    by_deadline_.clear();
  }
  wake_.notify_all();
  if (timer_.joinable()) timer_.join();
  for (auto& f : left) f(false);  // shutting down: none of them will be reached
}

void version_waiters::wait(std::uint64_t version, clock::time_point deadline,
                           const std::function<std::uint64_t()>& now_version, ready_fn ready) {
  {
    std::lock_guard lock(mu_);
    if (now_version() < version && !stop_) {
      by_deadline_.emplace(deadline, waiter{version, std::move(ready)});
      if (!timer_.joinable()) timer_ = std::thread([this] { run_timer(); });
      wake_.notify_all();
      return;
    }
  }
  ready(!stop_);
}

void version_waiters::reached(std::uint64_t version) {
  std::vector<ready_fn> due;
  {
    std::lock_guard lock(mu_);
    for (auto it = by_deadline_.begin(); it != by_deadline_.end();) {
      if (it->second.version <= version) {
        due.push_back(std::move(it->second.ready));
        it = by_deadline_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& f : due) f(true);
}

void version_waiters::cancel_all() {
  std::vector<ready_fn> left;
  {
    std::lock_guard lock(mu_);
    for (auto& [when, w] : by_deadline_) left.push_back(std::move(w.ready));
    by_deadline_.clear();
  }
  for (auto& f : left) f(false);
}

std::size_t version_waiters::waiting() const {
  std::lock_guard lock(mu_);
  return by_deadline_.size();
}

void version_waiters::run_timer() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    if (by_deadline_.empty()) {
      wake_.wait(lock);
      continue;
    }
    const auto first = by_deadline_.begin()->first;
    if (clock::now() < first) {
      wake_.wait_until(lock, first);
      continue;
    }
    std::vector<ready_fn> expired;
    while (!by_deadline_.empty() && by_deadline_.begin()->first <= clock::now()) {
      expired.push_back(std::move(by_deadline_.begin()->second.ready));
      by_deadline_.erase(by_deadline_.begin());
    }
    lock.unlock();
    for (auto& f : expired) f(false);
    lock.lock();
  }
}

}  // namespace spindle::graph
