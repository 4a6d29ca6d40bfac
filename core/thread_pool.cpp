#include "core/thread_pool.hpp"

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <memory>

#include "core/thread_priority.hpp"

namespace spindle {
namespace {

// Shared by the caller and the helper tasks of one parallel_for. Helpers that
// start after the last chunk finished find no work and never touch `fn`.
struct parallel_state {
  std::int64_t begin, end, grain, chunks;
  const std::function<void(std::int64_t, std::int64_t, std::size_t)>* fn;
  std::atomic<std::int64_t> next{0};
  std::atomic<std::size_t> next_slot{0};
  std::atomic<std::int64_t> done{0};
  std::mutex mu;
  std::condition_variable cv;
};

void run_chunks(parallel_state& s) {
  std::size_t slot = s.next_slot.fetch_add(1);
  for (;;) {
    std::int64_t c = s.next.fetch_add(1);
    if (c >= s.chunks) return;
    std::int64_t lo = s.begin + c * s.grain;
    std::int64_t hi = std::min(s.end, lo + s.grain);
    (*s.fn)(lo, hi, slot);
    if (s.done.fetch_add(1) + 1 == s.chunks) {
      std::lock_guard<std::mutex> lock(s.mu);
      s.cv.notify_all();
    }
  }
}

}  // namespace

std::size_t available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return static_cast<std::size_t>(n);
  }
  unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? hw : 1;
}

thread_pool::thread_pool(std::size_t workers, std::string name) {
  if (workers == 0) workers = available_cores();
  threads_.reserve(workers);
  for (std::size_t i = 0; i < workers; ++i) {
    threads_.emplace_back([this] {
      lower_to_compute_priority();  // pool work is compute: requests' threads go first
      worker_loop();
    });
    std::string thread_name = (name + "-" + std::to_string(i)).substr(0, 15);
    pthread_setname_np(threads_.back().native_handle(), thread_name.c_str());
  }
}

thread_pool::~thread_pool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void thread_pool::submit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void thread_pool::worker_loop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

void thread_pool::parallel_for(
    std::int64_t begin, std::int64_t end, std::int64_t grain,
    const std::function<void(std::int64_t, std::int64_t, std::size_t)>& fn) {
  if (end <= begin) return;
  if (grain < 1) grain = 1;
  auto s = std::make_shared<parallel_state>();
  s->begin = begin;
  s->end = end;
  s->grain = grain;
  s->chunks = (end - begin + grain - 1) / grain;
  s->fn = &fn;
  std::int64_t helpers = std::min<std::int64_t>(size(), s->chunks - 1);
  for (std::int64_t i = 0; i < helpers; ++i) submit([s] { run_chunks(*s); });
  run_chunks(*s);
  std::unique_lock<std::mutex> lock(s->mu);
  s->cv.wait(lock, [&] { return s->done.load() == s->chunks; });
}

}  // namespace spindle
