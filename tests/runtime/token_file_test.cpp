// Token files (the admin token, the cluster token): created private and whole,
// read back unchanged, refused when others may read them or when too short, and
// one token for every creator that races to make the same file.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <thread>
#include <vector>

#include "runtime/token_file.hpp"

namespace spindle::runtime {
namespace {

std::string scratch(const char* name) {
  auto dir = std::filesystem::temp_directory_path() /
             (std::string("spindle_token_") + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir.string();
}

// `path` holding the line `token`, with permissions `mode`.
std::string written_with_mode(const std::string& path, const std::string& token, unsigned mode) {
  std::ofstream(path) << token << "\n";
  std::filesystem::permissions(path, std::filesystem::perms(mode));
  return path;
}

unsigned mode_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

TEST(token_file_test, a_new_token_is_private_and_read_back_unchanged) {
  const auto dir = scratch("new");
  const auto path = dir + "/state/cluster.token";
  auto made = token_file(path, "cluster token file", true);
  ASSERT_TRUE(made.has_value()) << made.error().to_string();
  EXPECT_EQ(made->size(), 32u);
  EXPECT_EQ(mode_of(path), 0600u);
  EXPECT_EQ(mode_of(dir + "/state"), 0700u);  // the folder it made is private too
  auto again = token_file(path, "cluster token file", false);
  ASSERT_TRUE(again.has_value()) << again.error().to_string();
  EXPECT_EQ(*again, *made);
  std::filesystem::remove_all(dir);
}

TEST(token_file_test, a_missing_unreadable_or_short_token_is_refused_by_name) {
  const auto dir = scratch("bad");
  std::filesystem::create_directories(dir);
  auto missing = token_file(dir + "/none", "admin token file", false);
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message().find(dir + "/none: no admin token file"), std::string::npos)
      << missing.error().message();

  auto open = token_file(written_with_mode(dir + "/open.token", "0123456789abcdef0123", 0644),
                         "cluster token file", true);
  ASSERT_FALSE(open.has_value());
  EXPECT_NE(open.error().message().find("open to other users (mode 0644); run chmod 600"),
            std::string::npos)
      << open.error().message();

  auto brief = token_file(written_with_mode(dir + "/short.token", "tooshort", 0600),
                          "cluster token file", false);
  ASSERT_FALSE(brief.has_value());
  EXPECT_NE(brief.error().message().find("at least 16 characters"), std::string::npos);
  std::filesystem::remove_all(dir);
}

// Creators racing for one file (ranks started together on one host, or threads
// of one process) all come away with the token the file holds.
TEST(token_file_test, creators_racing_for_one_file_share_its_token) {
  const auto dir = scratch("race");
  const auto path = dir + "/race.token";
  std::vector<std::string> got(8);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < got.size(); ++i)
    threads.emplace_back([&, i] {
      auto t = token_file(path, "cluster token file", true);
      got[i] = t ? *t : "error: " + t.error().to_string();
    });
  for (auto& t : threads) t.join();
  auto file = token_file(path, "cluster token file", false);
  ASSERT_TRUE(file.has_value()) << file.error().to_string();
  for (const auto& g : got) EXPECT_EQ(g, *file);
  std::size_t leftovers = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) leftovers += e.path() != path;
  EXPECT_EQ(leftovers, 0u);  // no temporary file left behind
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace spindle::runtime
