#include "core/thread_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>

namespace spindle {
namespace {

TEST(thread_pool_test, parallel_for_visits_every_index_once) {
  thread_pool pool(3, "test-pool");
  std::vector<std::atomic<int>> hits(10007);
  pool.parallel_for(0, 10007, 100, [&](std::int64_t lo, std::int64_t hi, std::size_t slot) {
    EXPECT_LT(slot, pool.slots());
    for (auto i = lo; i < hi; ++i) hits[i].fetch_add(1);
  });
  for (auto& h : hits) ASSERT_EQ(h.load(), 1);
}

TEST(thread_pool_test, slots_are_unique_within_one_call) {
  thread_pool pool(2);
  std::mutex mu;
  std::map<std::size_t, std::thread::id> owner;
  pool.parallel_for(0, 1000, 1, [&](std::int64_t, std::int64_t, std::size_t slot) {
    std::lock_guard<std::mutex> lock(mu);
    auto [it, inserted] = owner.emplace(slot, std::this_thread::get_id());
    EXPECT_EQ(it->second, std::this_thread::get_id());
  });
  EXPECT_LE(owner.size(), pool.slots());
}

TEST(thread_pool_test, concurrent_callers_and_empty_ranges_finish) {
  thread_pool pool(2);
  std::atomic<std::int64_t> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&] {
      for (int r = 0; r < 50; ++r)
        pool.parallel_for(0, 1000, 7, [&](std::int64_t lo, std::int64_t hi, std::size_t) { total += hi - lo; });
    });
  for (auto& t : callers) t.join();
  pool.parallel_for(5, 5, 1, [&](std::int64_t, std::int64_t, std::size_t) { FAIL(); });
  EXPECT_EQ(total.load(), 4 * 50 * 1000);
}

TEST(thread_pool_test, submit_runs_every_task_before_destruction) {
  std::atomic<int> ran{0};
  {
    thread_pool pool(2);
    for (int i = 0; i < 100; ++i) pool.submit([&] { ran++; });
  }
  EXPECT_EQ(ran.load(), 100);
}

}  // namespace
}  // namespace spindle
