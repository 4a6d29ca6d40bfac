#include "colocation/colocated.hpp"

#include <numeric>

namespace spindle::colocation {

std::future<std::vector<status>> colocated_runner::start(std::vector<colocated_job> jobs,
                                                         bool check_memory) {
  std::vector<gpu::pool_slot> buffers(jobs.size());
  std::vector<status> results(jobs.size());
  if (check_memory) {
    std::uint64_t total = 0;
    for (const auto& j : jobs) total += (j.buffer_bytes + 511) / 512 * 512;
    if (total > pool_.capacity() - pool_.used()) {
      for (auto& r : results)
        r = make_error(errc::resource_exhausted, "group needs {} bytes, pool has {}", total,
                       pool_.capacity() - pool_.used());
      std::promise<std::vector<status>> p;
      p.set_value(std::move(results));
      return p.get_future();
    }
  }
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    auto b = pool_.insert(jobs[i].buffer_bytes);
    auto stream = pool_.lane_stream(i);  // each task of the group on its own stream
    if (!b)
      results[i] = std::move(b).error();
    else if (!stream)
      results[i] = std::move(stream).error();
    else
      buffers[i] = {*b, *stream};
  }
  // A launcher thread joins the pool's parallel_for, so the scheduler thread is
  // free to prepare the next group meanwhile.
  return std::async(std::launch::async, [this, jobs = std::move(jobs), buffers,
                                         results = std::move(results)]() mutable {
    workers_.parallel_for(0, std::int64_t(jobs.size()), 1,
                          [&](std::int64_t lo, std::int64_t hi, std::size_t) {
                            for (std::int64_t i = lo; i < hi; ++i)
                              if (results[i].is_ok()) results[i] = jobs[i].run(buffers[i]);
                          });
    pool_.clear();
    return std::move(results);
  });
}

}  // namespace spindle::colocation
