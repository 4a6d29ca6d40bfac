// GNNSched's device scheduler on the serving path: tasks from several threads
// run in groups that fit the pool, each in a buffer no other task of its group
// touches; oversize tasks are refused by size; the policy changes live.
#include "colocation/device_scheduler.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <thread>

namespace spindle::colocation {
namespace {

TEST(device_scheduler_test, tasks_from_many_threads_run_in_groups_within_the_pool) {
  thread_pool workers(2, "test-w");
  auto d = device_scheduler::create(3 * 4096, workers, grouping_policy::sqtf);
  ASSERT_TRUE(d.has_value()) << d.error().to_string();
  std::atomic<int> bad{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&, c] {
      for (int i = 0; i < 20; ++i) {
        const auto mark = std::byte(c * 20 + i);
        auto st = (*d)->run(4000, 0.001 * (c + 1), [&](gpu::pool_slot slot) {
          const auto b = slot.memory;
          if (b.size() < 4000) return make_error(errc::internal, "buffer {} bytes", b.size());
          std::memset(b.data(), int(mark), b.size());
          std::this_thread::sleep_for(std::chrono::microseconds(200));
          for (auto x : b) bad += x != mark;  // another task of the group wrote here
          return status::ok();
        });
        bad += !st.is_ok();
      }
    });
  for (auto& t : callers) t.join();
  EXPECT_EQ(bad.load(), 0);
  const auto c = (*d)->stats();
  EXPECT_EQ(c.tasks, 80u);
  EXPECT_LE(c.largest_group, 3u);  // three 4 KiB buffers fit the pool
  EXPECT_LE(c.groups, 80u);
  EXPECT_GE(c.groups, 27u);
}

TEST(device_scheduler_test, an_oversize_task_is_refused_by_size_and_the_policy_changes_live) {
  thread_pool workers(1, "test-w");
  auto d = device_scheduler::create(8192, workers, grouping_policy::fifo);
  ASSERT_TRUE(d.has_value());
  bool ran = false;
  auto st = (*d)->run(10000, 0.01, [&](gpu::pool_slot) {
    ran = true;
    return status::ok();
  });
  EXPECT_EQ(st.code(), errc::resource_exhausted);
  EXPECT_NE(st.message().find("needs 10240 bytes, the device pool holds 8192"), std::string::npos)
      << st.message();
  EXPECT_FALSE(ran);
  (*d)->set_policy(grouping_policy::bqt);
  EXPECT_EQ((*d)->policy(), grouping_policy::bqt);
  // A task's own error comes back to its caller.
  auto failed = (*d)->run(100, 0.01, [](gpu::pool_slot) {
    return make_error(errc::invalid_argument, "the task's own error");
  });
  EXPECT_EQ(failed.message(), "the task's own error");
}

}  // namespace
}  // namespace spindle::colocation
