// A queue drained by one named background thread: producers push batches of
// items without waiting, the thread hands everything queued so far to `apply`
// every `period` (or at once when pushed to), and flush() waits until all that
// was pushed before it has been applied. The VDB backends use it to write
// access times and use counts asynchronously (HPS §5).
// Thread-safe: push and flush from any thread; `apply` runs only on the thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace spindle::hps {

template <class Item>
class background_queue {
 public:
  background_queue(const std::string& thread_name, std::function<void(std::vector<Item>&)> apply,
                   std::chrono::milliseconds period = std::chrono::milliseconds(5))
      : apply_(std::move(apply)), period_(period), thread_([this] { loop(); }) {
    pthread_setname_np(thread_.native_handle(), thread_name.substr(0, 15).c_str());
  }
  ~background_queue() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  background_queue(const background_queue&) = delete;
  background_queue& operator=(const background_queue&) = delete;

  void push(std::vector<Item> items) {
    if (items.empty()) return;
    std::lock_guard lock(mu_);
    items_.insert(items_.end(), std::make_move_iterator(items.begin()),
                  std::make_move_iterator(items.end()));
    cv_.notify_all();
  }

  /// Returns once every item pushed before the call has been applied.
  void flush() {
    std::unique_lock lock(mu_);
    cv_.notify_all();
    cv_.wait(lock, [&] { return stopping_ || (items_.empty() && !applying_); });
  }

 private:
  void loop() {
    std::unique_lock lock(mu_);
    while (!stopping_) {
      if (items_.empty()) cv_.wait_for(lock, period_);
      std::vector<Item> batch;
      batch.swap(items_);
      applying_ = true;
      lock.unlock();
      if (!batch.empty()) apply_(batch);
      lock.lock();
      applying_ = false;
      cv_.notify_all();
    }
  }

  std::function<void(std::vector<Item>&)> apply_;
  std::chrono::milliseconds period_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Item> items_;  // guarded by mu_
  bool applying_ = false;    // guarded by mu_
  bool stopping_ = false;    // guarded by mu_
  std::thread thread_;       // declared last: starts after every other member
};

}  // namespace spindle::hps
