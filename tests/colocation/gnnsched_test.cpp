#include "colocation/gnnsched.hpp"

#include <gtest/gtest.h>

#include "gpu/device.hpp"
#include "gpu/memory_pool.hpp"

namespace spindle::colocation {
namespace {

std::vector<std::uint64_t> ids(const std::vector<sched_task>& g) {
  std::vector<std::uint64_t> out;
  for (const auto& t : g) out.push_back(t.id);
  return out;
}

std::vector<sched_task> queue() {
  // id, pmc, qt: arrival order 0..5.
  return {{0, 40, 6.0}, {1, 30, 1.0}, {2, 20, 5.0}, {3, 50, 2.0}, {4, 10, 4.0}, {5, 30, 3.0}};
}

TEST(gnnsched_test, policy_names_round_trip) {
  for (auto p : {grouping_policy::fifo, grouping_policy::sqtf, grouping_policy::bqt})
    EXPECT_EQ(*parse_grouping_policy(to_string(p)), p);
  EXPECT_FALSE(parse_grouping_policy("lifo").has_value());
}

TEST(gnnsched_test, fifo_packs_in_arrival_order_while_it_fits) {
  auto g = group_tasks(queue(), 100, grouping_policy::fifo);
  ASSERT_TRUE(g.has_value());
  ASSERT_EQ(g->size(), 2u);  // 40+30+20 = 90; +50 would pass MA
  EXPECT_EQ(ids((*g)[0]), (std::vector<std::uint64_t>{0, 1, 2}));
  EXPECT_EQ(ids((*g)[1]), (std::vector<std::uint64_t>{3, 4, 5}));
}

TEST(gnnsched_test, sqtf_follows_algorithm_1) {
  // SP = 180, MA = 100: gTH = ceil(180 / ceil(180/100)) = 90. QT order: 1,3,5,4,2,0.
  // gPMC: 30, 80, then 5 would make 110 > MA -> new group; 30+10+20 = 60, 0 -> 100.
  auto g = group_tasks(queue(), 100, grouping_policy::sqtf);
  ASSERT_TRUE(g.has_value());
  ASSERT_EQ(g->size(), 2u);
  EXPECT_EQ(ids((*g)[0]), (std::vector<std::uint64_t>{1, 3}));
  EXPECT_EQ(ids((*g)[1]), (std::vector<std::uint64_t>{5, 4, 2, 0}));
}

TEST(gnnsched_test, bqt_alternates_the_deque_ends) {
  // Deque by QT: 1,3,5,4,2,0; pops: left 1, right 0 (70), left 3 (would pass MA -> new
  // group), right 2 (70), left 5 (100; gPMC 70 <= gTH 90 so it joins), right 4: gPMC
  // 100 > gTH -> new group.
  auto g = group_tasks(queue(), 100, grouping_policy::bqt);
  ASSERT_TRUE(g.has_value());
  ASSERT_EQ(g->size(), 3u);
  EXPECT_EQ(ids((*g)[0]), (std::vector<std::uint64_t>{1, 0}));
  EXPECT_EQ(ids((*g)[1]), (std::vector<std::uint64_t>{3, 2, 5}));
  EXPECT_EQ(ids((*g)[2]), (std::vector<std::uint64_t>{4}));
}

TEST(gnnsched_test, no_group_ever_exceeds_ma) {
  std::vector<sched_task> q;
  for (std::uint64_t i = 0; i < 200; ++i)
    q.push_back({i, 1 + (i * 7919) % 97, double((i * 31) % 17)});
  for (auto p : {grouping_policy::fifo, grouping_policy::sqtf, grouping_policy::bqt}) {
    auto g = group_tasks(q, 150, p);
    ASSERT_TRUE(g.has_value());
    std::size_t n = 0;
    for (const auto& grp : *g) {
      std::uint64_t sum = 0;
      for (const auto& t : grp) sum += t.pmc;
      EXPECT_LE(sum, 150u) << to_string(p);
      n += grp.size();
    }
    EXPECT_EQ(n, q.size());
  }
}

TEST(gnnsched_test, a_task_larger_than_ma_is_rejected_by_id) {
  auto q = queue();
  q.push_back({9, 101, 1.0});
  auto g = group_tasks(q, 100, grouping_policy::bqt);
  ASSERT_FALSE(g.has_value());
  EXPECT_EQ(g.error().code(), errc::resource_exhausted);
  EXPECT_NE(g.error().message().find("task 9: PMC 101 bytes exceeds"), std::string::npos);
}

TEST(gnnsched_test, memory_pool_inserts_contiguous_buffers_and_clears_per_group) {
  auto pool = gpu::memory_pool::create(4096);
  ASSERT_TRUE(pool.has_value());
  auto a = pool->insert(100);
  auto b = pool->insert(1000);
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_EQ(a->data() + 512, b->data());  // contiguous, 512-byte padded
  EXPECT_EQ(pool->used(), 512u + 1024u);
  EXPECT_FALSE(pool->insert(4096).has_value());
  pool->clear();
  auto c = pool->insert(4096);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->data(), a->data());
}

}  // namespace
}  // namespace spindle::colocation

#include <atomic>

#include "colocation/colocated.hpp"

namespace spindle::colocation {
namespace {

TEST(colocated_test, a_group_runs_concurrently_in_disjoint_buffers_then_the_pool_clears) {
  auto pool = gpu::memory_pool::create(8 * 1024);
  thread_pool workers(1, "test");
  colocated_runner runner(*pool, workers);
  std::vector<colocated_job> jobs;
  std::vector<std::byte*> seen(4);
  for (int i = 0; i < 4; ++i)
    jobs.push_back({1024, [&seen, i](gpu::pool_slot s) {
                      std::fill(s.memory.begin(), s.memory.end(), std::byte(i));
                      seen[i] = s.memory.data();
                      return status::ok();
                    }});
  auto results = runner.start(std::move(jobs)).get();
  for (const auto& r : results) EXPECT_TRUE(r.is_ok());
  for (int i = 1; i < 4; ++i) EXPECT_EQ(seen[i] - seen[i - 1], 1024);
  EXPECT_EQ(pool->used(), 0u);
  // Too much for the pool: refused as a whole with memory checks, partly failed without.
  std::vector<colocated_job> big;
  for (int i = 0; i < 3; ++i) big.push_back({4096, [](gpu::pool_slot) { return status::ok(); }});
  auto refused = runner.start(big).get();
  for (const auto& r : refused) EXPECT_EQ(r.code(), errc::resource_exhausted);
  auto all_at_once = runner.start(big, false).get();
  int failed = 0;
  for (const auto& r : all_at_once) failed += !r.is_ok();
  EXPECT_EQ(failed, 1);
}

// GNNSched §3.2 on a GPU gives each task of a group its own stream; a host pool
// gives none (its tasks run on threads), and a GPU pool here names the driver.
TEST(gnnsched_test, host_pool_slots_have_no_stream_and_a_gpu_pool_needs_a_gpu) {
  auto pool = gpu::memory_pool::create(8 * 1024);
  ASSERT_TRUE(pool.has_value());
  EXPECT_EQ(pool->where(), gpu::device_kind::host);
  thread_pool workers(2);
  colocated_runner runner(*pool, workers);
  std::vector<void*> streams(3, &workers);
  std::vector<colocated_job> jobs;
  for (int i = 0; i < 3; ++i)
    jobs.push_back({1024, [&streams, i](gpu::pool_slot s) {
                      streams[i] = s.stream;
                      return s.memory.size() >= 1024 ? status::ok()
                                                     : make_error(errc::internal, "short slot");
                    }});
  for (const auto& r : runner.start(std::move(jobs)).get()) EXPECT_TRUE(r.is_ok());
  for (void* s : streams) EXPECT_EQ(s, nullptr);
  const auto& devices = gpu::query_devices();
  if (!devices.devices.empty() && devices.devices.front().kind == gpu::device_kind::cuda)
    GTEST_SKIP() << "a GPU is present: make gpu-check covers the device pool";
  auto on_gpu = gpu::memory_pool::create(8 * 1024, gpu::device_kind::cuda);
  ASSERT_FALSE(on_gpu.has_value());
  EXPECT_FALSE(on_gpu.error().message().empty());
}

}  // namespace
}  // namespace spindle::colocation
