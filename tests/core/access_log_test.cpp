// The access log's lines reach the file within about a second of being written,
// even when no call follows them (a server whose traffic stopped).
#include "core/access_log.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace spindle {
namespace {

std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(access_log_test, the_last_lines_before_a_pause_are_flushed_within_seconds) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("spindle_access_log_" + std::to_string(::getpid()) + ".log");
  std::filesystem::remove(path);
  auto log = access_log::open(path.string());
  ASSERT_TRUE(log.has_value()) << log.error().message();
  for (int i = 0; i < 3; ++i) (*log)->write("capnp", "sage", "gnn", 1, "ok", 0.5);
  std::string text;
  for (int i = 0; i < 40 && text.empty(); ++i) {  // the log stays open: only its flusher writes
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    text = read_all(path);
  }
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3) << text;
  EXPECT_NE(text.find("door=capnp model=sage kind=gnn items=1 status=ok ms=0.500"),
            std::string::npos) << text;
  log->reset();
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace spindle
