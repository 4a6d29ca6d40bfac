#include "core/progress.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace spindle {
namespace {

TEST(progress_test, reports_the_final_count_once) {
  ::testing::internal::CaptureStderr();
  {
    progress p("counting", 4000, "things");
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; ++t)
      ts.emplace_back([&] {
        for (int i = 0; i < 1000; ++i) p.advance(1);
      });
    for (auto& t : ts) t.join();
    p.finish();
  }  // destructor must not print a second line
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("counting: 4000 things in"), std::string::npos) << err;
  EXPECT_EQ(err.find("counting: 4000 things in"), err.rfind("counting: 4000 things in"));
}

TEST(progress_test, disabled_progress_prints_nothing) {
  set_progress_enabled(false);
  ::testing::internal::CaptureStderr();
  {
    progress p("quiet", 10);
    p.advance(10);
  }
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  set_progress_enabled(true);
}

}  // namespace
}  // namespace spindle
