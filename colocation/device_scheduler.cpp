#include "colocation/device_scheduler.hpp"

#include <pthread.h>

#include <algorithm>
#include <future>

#include "core/thread_priority.hpp"

namespace spindle::colocation {

struct device_scheduler::task {
  std::uint64_t id = 0, bytes = 0;
  double qos_s = 0;
  work_fn work;
  done_fn done;
};

device_scheduler::device_scheduler(gpu::memory_pool pool, thread_pool& workers,
                                   grouping_policy policy)
    : pool_(std::move(pool)), runner_(pool_, workers), policy_(policy) {}

expected<std::unique_ptr<device_scheduler>> device_scheduler::create(std::size_t pool_bytes,
                                                                     thread_pool& workers,
                                                                     grouping_policy policy,
                                                                     gpu::device_kind where) {
  SPINDLE_ASSIGN_OR_RETURN(auto pool, gpu::memory_pool::create(pool_bytes, where));
  std::unique_ptr<device_scheduler> s(new device_scheduler(std::move(pool), workers, policy));
  s->thread_ = std::thread([p = s.get()] { p->loop(); });
  return s;
}

device_scheduler::~device_scheduler() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void device_scheduler::submit(std::uint64_t bytes, double qos_s, work_fn work, done_fn done) {
  const std::uint64_t rounded = (bytes + 511) / 512 * 512;
  if (rounded > pool_.capacity())
    return done(make_error(errc::resource_exhausted,
                           "inference task needs {} bytes, the device pool holds {} (raise "
                           "--gnnsched-memory)",
                           rounded, pool_.capacity()));
  auto t = std::make_shared<task>();
  t->bytes = rounded;
  t->qos_s = qos_s;
  t->work = std::move(work);
  t->done = std::move(done);
  {
    std::lock_guard lock(mu_);
    if (stop_) {
      t->done(make_error(errc::unavailable, "the device scheduler is stopping"));
      return;
    }
    t->id = next_id_++;
    queue_.push_back(std::move(t));
  }
  cv_.notify_one();
}

status device_scheduler::run(std::uint64_t bytes, double qos_s, work_fn work) {
  std::promise<status> result;
  auto got = result.get_future();
  submit(bytes, qos_s, std::move(work), [&result](status st) { result.set_value(std::move(st)); });
  return got.get();
}

// Groups the waiting tasks by the policy and takes the first group out of the queue.
std::vector<std::shared_ptr<device_scheduler::task>> device_scheduler::next_group() {
  std::vector<sched_task> waiting;
  for (const auto& t : queue_) waiting.push_back({t->id, t->bytes, t->qos_s});
  auto groups = group_tasks(waiting, pool_.capacity(), policy());
  std::vector<std::shared_ptr<task>> out;
  if (!groups || groups->empty()) {  // cannot happen after run()'s size check: run one alone
    out.push_back(queue_.front());
    queue_.pop_front();
    return out;
  }
  for (const auto& st : groups->front()) {
    auto it =
        std::find_if(queue_.begin(), queue_.end(), [&](const auto& t) { return t->id == st.id; });
    out.push_back(*it);
    queue_.erase(it);
  }
  return out;
}

void device_scheduler::loop() {
  pthread_setname_np(pthread_self(), "gnnsched");
  lower_to_compute_priority();
  for (;;) {
    std::vector<std::shared_ptr<task>> group;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      group = next_group();
      std::uint64_t bytes = 0;
      for (const auto& t : group) bytes += t->bytes;
      counters_.tasks += group.size();
      ++counters_.groups;
      if (group.size() > 1) counters_.grouped_tasks += group.size();
      if (bytes > pool_.capacity()) ++counters_.overruns;
      counters_.largest_group = std::max<std::uint64_t>(counters_.largest_group, group.size());
    }
    std::vector<colocated_job> jobs;
    for (const auto& t : group) jobs.push_back({t->bytes, t->work});
    auto results = runner_.start(std::move(jobs)).get();
    for (std::size_t i = 0; i < group.size(); ++i) group[i]->done(results[i]);
  }
}

device_scheduler::counters device_scheduler::stats() const {
  std::lock_guard lock(mu_);
  return counters_;
}

}  // namespace spindle::colocation
