// Small text files are read only when they are regular files within the limit:
// a FIFO and /dev/zero are refused at once (no hang, no unbounded read).
#include "core/text_file.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/support/temp_path.hpp"

namespace spindle {
namespace {

TEST(text_file_test, reads_a_regular_file_whole) {
  const auto p = testing::temp_path("text_file", "ok.toml");
  std::ofstream(p) << "[model]\nname = \"x\"\n";
  auto t = read_text_file(p, "model description");
  ASSERT_TRUE(t.has_value()) << t.error().to_string();
  EXPECT_EQ(*t, "[model]\nname = \"x\"\n");
}

TEST(text_file_test, refuses_a_fifo_without_waiting_for_a_writer) {
  const auto p = testing::temp_path("text_file", "fifo.toml");
  std::filesystem::remove(p);
  ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
  auto t = read_text_file(p, "model description");
  ASSERT_FALSE(t.has_value());
  EXPECT_NE(t.error().to_string().find("must be a regular file, found a FIFO"), std::string::npos)
      << t.error().to_string();
}

TEST(text_file_test, refuses_a_device_and_a_file_over_the_limit) {
  auto zero = read_text_file("/dev/zero", "topology file");
  ASSERT_FALSE(zero.has_value());
  EXPECT_NE(zero.error().to_string().find("/dev/zero: topology file must be a regular file, found "
                                          "a character device"),
            std::string::npos)
      << zero.error().to_string();
  const auto p = testing::temp_path("text_file", "big.json");
  std::ofstream(p) << std::string(5000, ' ');
  auto big = read_text_file(p, "dataset metadata", 4096);
  ASSERT_FALSE(big.has_value());
  EXPECT_NE(big.error().to_string().find("is 5000 bytes, more than the 4096 allowed"),
            std::string::npos)
      << big.error().to_string();
  auto missing = read_text_file(p + ".none", "calibration");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), errc::not_found);
}

}  // namespace
}  // namespace spindle
