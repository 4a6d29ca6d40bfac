// The load generators' pure parts: level ranges, Zipf keys, recommendation
// batches from a model's description and from a JSON file, and a sweep over a
// runner that answers at once.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>

#include "client/load_sweep.hpp"
#include "client/rec_load.hpp"

namespace spindle::client {
namespace {

TEST(load_sweep_test, ranges_list_every_level_and_errors_name_the_flag) {
  auto r = parse_range("2:8:2", "--concurrency-range");
  ASSERT_TRUE(r.has_value()) << r.error().to_string();
  EXPECT_EQ(*r, (std::vector<double>{2, 4, 6, 8}));
  auto one = parse_range("5", "--rate-range");
  ASSERT_TRUE(one.has_value());
  EXPECT_EQ(*one, std::vector<double>{5});
  auto bad = parse_range("2:x", "--rate-range");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("--rate-range '2:x': 'x' is not a number"),
            std::string::npos)
      << bad.error().message();
}

TEST(load_sweep_test, a_runner_that_answers_at_once_is_stable_at_every_level) {
  std::size_t windows = 0;
  window_runner run = [&](std::size_t in_flight, const std::vector<double>& send_at,
                          const answer_fn& done) -> status {
    ++windows;
    EXPECT_TRUE(send_at.empty());  // closed loop
    EXPECT_GE(in_flight, 1u);
    for (int i = 0; i < 200; ++i) done(i % 50 != 0, 0.001);  // 4 refusals per window
    return status::ok();
  };
  auto rows = run_sweep(run, 200, false, {1, 2}, 7);
  ASSERT_TRUE(rows.has_value()) << rows.error().to_string();
  ASSERT_EQ(rows->size(), 2u);
  for (const auto& row : *rows) {
    EXPECT_EQ(row.ok, 196u);
    EXPECT_EQ(row.refused, 4u);
    EXPECT_DOUBLE_EQ(row.p99_ms, 1.0);
    EXPECT_GE(row.windows, 2);
  }
  EXPECT_GE(windows, 4u);
}

TEST(rec_load_test, zipf_keys_stay_in_range_and_favour_the_first) {
  std::map<std::int64_t, int> seen;
  for (int i = 0; i < 10000; ++i) {
    const double u = (i + 0.5) / 10000.0;
    const auto k = zipf_key(u, 1000, 1.2);
    ASSERT_GE(k, 0);
    ASSERT_LT(k, 1000);
    ++seen[k];
  }
  EXPECT_GT(seen[0], seen[10]);
  EXPECT_GT(seen[10], seen[500]);
  for (int i = 0; i < 100; ++i) {  // s = 0: uniform over the rows
    const auto k = zipf_key((i + 0.5) / 100.0, 100, 0.0);
    EXPECT_EQ(k, i);
  }
}

TEST(rec_load_test, batches_follow_the_model_description) {
  transport::rpc::model_info m{"dlrm", "dlrm", "dlrm", 13, 1, 3, "1"};
  m.table_rows = {10, 1000, 5};
  rec_load_options o;
  o.batch = 16;
  o.lookups = 2;
  o.distinct = 3;
  auto calls = rec_load_calls(m, "dlrm", o);
  ASSERT_TRUE(calls.has_value()) << calls.error().to_string();
  ASSERT_EQ(calls->size(), 3u);
  for (const auto& c : *calls) {
    EXPECT_EQ(c.batch, 16u);
    EXPECT_EQ(c.dense.size(), 16u * 13);
    ASSERT_EQ(c.sparse.size(), 3u);
    for (std::size_t t = 0; t < 3; ++t) {
      EXPECT_EQ(c.sparse[t].indices.size(), 32u);
      for (auto k : c.sparse[t].indices) {
        EXPECT_GE(k, 0);
        EXPECT_LT(k, std::int64_t(m.table_rows[t]));
      }
    }
  }
  m.table_rows.clear();  // an old server: the caller must give a batch
  auto refused = rec_load_calls(m, "dlrm", rec_load_options{});
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message().find("--input"), std::string::npos);
}

TEST(rec_load_test, a_json_batch_is_read_and_a_bad_one_is_named) {
  const std::string good = ::testing::TempDir() + "spindle_rec_batch.json";
  std::ofstream(good) << R"({"dense": [[0.5, 1.5], [2, 3]], "sparse": [[[1, 2], [3]], [[4], [5, 6]]]})";
  auto call = rec_call_from_json(good);
  ASSERT_TRUE(call.has_value()) << call.error().to_string();
  EXPECT_EQ(call->batch, 2u);
  EXPECT_EQ(call->dense, (std::vector<float>{0.5f, 1.5f, 2, 3}));
  ASSERT_EQ(call->sparse.size(), 2u);
  const std::string bad = ::testing::TempDir() + "spindle_rec_bad.json";
  std::ofstream(bad) << R"({"dense": [[1]], "sparse": []})";
  auto refused = rec_call_from_json(bad);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message().find(bad), std::string::npos);
  std::remove(good.c_str());
  std::remove(bad.c_str());
}

}  // namespace
}  // namespace spindle::client
