// A pool of workers for one recommendation model (Hera's "workers"): N threads,
// each running whole queries from one FIFO queue. resize() changes N live:
// new workers start at once; surplus ones finish the query they hold and
// leave, so no queued query is dropped. Thread-safe.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace spindle::serving {

class worker_pool {
 public:
  worker_pool(std::size_t workers, std::string name);
  ~worker_pool();  // runs what is queued, then joins
  worker_pool(const worker_pool&) = delete;
  worker_pool& operator=(const worker_pool&) = delete;

  void submit(std::function<void()> job);
  /// Sets the number of workers (at least 1).
  void resize(std::size_t workers);
  std::size_t workers() const;
  std::size_t queued() const;
  /// Workers neither running a job nor about to take a queued one: what a call
  /// may borrow for intra-call parallelism without delaying another.
  std::size_t idle_workers() const;
  /// Blocks until no query is queued or running (and each finished query's
  /// captures are destroyed), e.g. before what those captures own goes away.
  void wait_idle();

 private:
  void run(std::size_t id);

  std::string name_;
  mutable std::mutex mu_;
  std::condition_variable cv_, idle_cv_;
  std::size_t active_ = 0;  // queries being run
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;  // grows; finished ones are joined on shutdown
  std::size_t target_ = 0;            // workers wanted
  std::size_t running_ = 0;           // workers alive
  std::vector<bool> retired_;         // per thread id: told to leave
  bool stopping_ = false;
};

}  // namespace spindle::serving
