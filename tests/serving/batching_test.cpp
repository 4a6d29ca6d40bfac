// The batch policy's split: how many batches a closing batch becomes when
// several pipelines are idle (serving::split_parts).
#include <gtest/gtest.h>

#include "serving/batching.hpp"

namespace spindle::serving {
namespace {

TEST(batching_test, a_closing_batch_is_split_into_parts_of_at_least_split_min_per_idle_pipeline) {
  EXPECT_EQ(split_parts(64, 2, 16), 2u);
  EXPECT_EQ(split_parts(64, 4, 16), 4u);
  EXPECT_EQ(split_parts(64, 8, 16), 4u);   // parts never below split_min
  EXPECT_EQ(split_parts(31, 2, 16), 1u);   // not two parts' worth
  EXPECT_EQ(split_parts(32, 2, 16), 2u);
  EXPECT_EQ(split_parts(64, 1, 16), 1u);   // one idle pipeline: one batch
  EXPECT_EQ(split_parts(64, 0, 16), 1u);   // none idle: it queues whole
  EXPECT_EQ(split_parts(64, 4, 0), 1u);    // 0: never split
  EXPECT_EQ(split_parts(3, 4, 1), 3u);     // split_min 1: one call a pipeline
}

}  // namespace
}  // namespace spindle::serving
