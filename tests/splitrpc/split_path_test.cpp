// SplitRPC's pieces: the tensor queue hands out contiguous batches across the
// ring's wrap without copying, keeps order, refuses what does not fit; the
// Inference Monitor only moves calls one step forward.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "splitrpc/inference_monitor.hpp"
#include "splitrpc/tensor_queue.hpp"

namespace spindle::splitrpc {
namespace {

TEST(tensor_queue_test, batches_are_contiguous_across_the_wrap_and_in_order) {
  auto q = std::move(*tensor_queue::create(4096));
  const std::size_t cap = q->capacity();
  const std::size_t req = 1000;
  std::uint64_t value = 0;
  for (int round = 0; round < 20; ++round) {  // enough to wrap several times
    std::vector<std::uint64_t> ids;
    for (int i = 0; i < 3; ++i) {
      auto s = q->reserve(req);
      ASSERT_TRUE(s.has_value()) << s.error().to_string();
      std::memset(s->data, int(value++ % 251), req);
      ids.push_back(s->id);
    }
    for (auto id : ids) ASSERT_TRUE(q->commit(id));
    auto b = q->take(16, cap);
    ASSERT_EQ(b.ids, ids);
    ASSERT_EQ(b.bytes, 3 * req);
    for (int i = 0; i < 3; ++i) {  // read as one span, even when it wrapped
      const auto expect = std::byte((value - 3 + i) % 251);
      EXPECT_EQ(b.data[i * req], expect);
      EXPECT_EQ(b.data[i * req + req - 1], expect);
    }
    ASSERT_TRUE(q->release(b));
  }
  EXPECT_EQ(q->used_bytes(), 0u);
}

TEST(tensor_queue_test, uncommitted_heads_block_and_full_rings_refuse) {
  auto q = std::move(*tensor_queue::create(4096));
  auto a = q->reserve(1000);
  auto b = q->reserve(1000);
  ASSERT_TRUE(q->commit(b->id));
  EXPECT_TRUE(q->take(8, 1 << 20).ids.empty());  // a is still being received
  ASSERT_TRUE(q->commit(a->id));
  EXPECT_EQ(q->take(1, 1 << 20).ids.size(), 1u);  // max_requests respected
  auto big = q->reserve(q->capacity());
  ASSERT_FALSE(big.has_value());
  EXPECT_EQ(big.error().code(), errc::resource_exhausted);
  EXPECT_FALSE(q->commit(999).is_ok());
  EXPECT_FALSE(q->commit(a->id).is_ok());  // twice
}

TEST(tensor_queue_test, a_producer_and_a_consumer_thread_keep_every_byte) {
  auto q = std::move(*tensor_queue::create(1 << 16));
  constexpr int n = 5000;
  std::thread producer([&] {
    for (int i = 0; i < n;) {
      auto s = q->reserve(100 + i % 300);
      if (!s) {
        std::this_thread::yield();
        continue;
      }
      std::memset(s->data, i % 256, s->bytes);
      ASSERT_TRUE(q->commit(s->id));
      ++i;
    }
  });
  int seen = 0, bad = 0;
  while (seen < n) {
    auto b = q->take(32, 1 << 14);
    std::size_t off = 0;
    for (std::size_t k = 0; k < b.ids.size(); ++k, ++seen) {
      bad += b.data[off] != std::byte(seen % 256) ||
             b.data[off + b.sizes[k] - 1] != std::byte(seen % 256);
      bad += b.sizes[k] != std::size_t(100 + seen % 300);
      off += b.sizes[k];
    }
    if (!b.ids.empty()) {
      ASSERT_TRUE(q->release(b));
    } else {
      std::this_thread::yield();
    }
  }
  producer.join();
  EXPECT_EQ(bad, 0);
}

TEST(inference_monitor_test, calls_move_one_step_forward_only) {
  inference_monitor m;
  ASSERT_TRUE(m.open(7));
  EXPECT_FALSE(m.open(7).is_ok());
  const status skip = m.advance(7, call_state::work_complete);
  EXPECT_NE(skip.message().find("call 7 cannot go from READY to WORK_COMPLETE"), std::string::npos)
      << skip.message();
  ASSERT_TRUE(m.advance(7, call_state::rx_complete));
  EXPECT_EQ(m.live()[1], 1u);
  ASSERT_TRUE(m.advance(7, call_state::work_complete));
  ASSERT_TRUE(m.advance(7, call_state::tx_complete));
  EXPECT_FALSE(m.state(7).has_value());
  EXPECT_EQ(m.completed(), 1u);
  EXPECT_FALSE(m.advance(7, call_state::tx_complete).is_ok());
  for (auto s : {call_state::ready, call_state::rx_complete, call_state::work_complete,
                 call_state::tx_complete}) {
    EXPECT_FALSE(to_string(s).empty());
  }
}

}  // namespace
}  // namespace spindle::splitrpc
