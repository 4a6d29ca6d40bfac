#include "gpu/device.hpp"

#include <gtest/gtest.h>

namespace spindle::gpu {
namespace {

TEST(device_test, always_reports_at_least_one_usable_device) {
  const auto& r = query_devices();
  ASSERT_FALSE(r.devices.empty());
  EXPECT_FALSE(r.cuda_status.empty());
  if (r.devices.front().kind == device_kind::host) {
    EXPECT_GT(r.devices.front().memory_bytes, 0u);
    EXPECT_EQ(r.devices.size(), 1u);
  }
#ifdef SPINDLE_WITH_CUDA
  EXPECT_TRUE(r.cuda_built);
#else
  EXPECT_FALSE(r.cuda_built);
  EXPECT_EQ(r.cuda_status, "built without CUDA");
#endif
}

TEST(device_test, query_is_cached_and_logged_once) {
  const auto* a = &query_devices();
  ::testing::internal::CaptureStderr();
  const auto* b = &query_devices();
  EXPECT_EQ(a, b);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err.find("no CUDA device"), std::string::npos);  // logged by the first call only
}

TEST(device_test, kinds_have_names) {
  EXPECT_EQ(to_string(device_kind::host), "host");
  EXPECT_EQ(to_string(device_kind::cuda), "cuda");
}

}  // namespace
}  // namespace spindle::gpu
