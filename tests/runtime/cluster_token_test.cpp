// The cluster token handed to a rank under a launcher: SPINDLE_CLUSTER_TOKEN or
// --token-file (a Kubernetes Secret's file). Each refusal names the flag or the
// variable: empty, short, unreadable, writable by others, two different tokens.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "runtime/cluster_token.hpp"

namespace spindle::runtime {
namespace {

const std::string kGoodToken = "0123456789abcdef0123456789abcdef";

// A fresh folder for this test's files.
std::string handed_dir(const char* name) {
  auto dir = std::filesystem::temp_directory_path() /
             (std::string("spindle_handed_") + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// `text` in `path` with permissions `mode`.
std::string secret_file(const std::string& path, const std::string& text, unsigned mode) {
  std::ofstream(path) << text;
  std::filesystem::permissions(path, std::filesystem::perms(mode));
  return path;
}

// The refusal's text, or a failure when `r` is a token.
std::string refusal(const expected<std::optional<std::string>>& r) {
  EXPECT_FALSE(r.has_value());
  return r.has_value() ? std::string() : r.error().message();
}

TEST(cluster_token_test, the_environment_or_a_secret_file_hands_the_token) {
  const auto dir = handed_dir("ok");
  EXPECT_EQ(handed_cluster_token("", nullptr).value(), std::nullopt);  // the TOML's file then
  EXPECT_EQ(handed_cluster_token("", kGoodToken.c_str()).value(), kGoodToken);
  // A Secret's file with or without a newline; the same token twice is fine.
  const auto file = secret_file(dir + "/token", kGoodToken + "\r\n", 0400);
  EXPECT_EQ(handed_cluster_token(file, nullptr).value(), kGoodToken);
  EXPECT_EQ(handed_cluster_token(file, kGoodToken.c_str()).value(), kGoodToken);
  // Kubernetes mounts a Secret's key as a symlink into ..data/, mode 0644 by
  // default: taken (with a warning), as the pod's own user reads it.
  std::filesystem::create_directories(dir + "/..data");
  secret_file(dir + "/..data/token", kGoodToken, 0644);
  std::filesystem::create_symlink("..data/token", dir + "/mounted");
  EXPECT_EQ(handed_cluster_token(dir + "/mounted", nullptr).value(), kGoodToken);
  std::filesystem::remove_all(dir);
}

TEST(cluster_token_test, refusals_name_the_flag_or_the_variable) {
  const auto dir = handed_dir("refused");
  EXPECT_NE(refusal(handed_cluster_token("", "")).find("SPINDLE_CLUSTER_TOKEN is empty"),
            std::string::npos);
  EXPECT_NE(refusal(handed_cluster_token("", "short"))
                .find("SPINDLE_CLUSTER_TOKEN holds 5 characters: a cluster token needs at least 16"),
            std::string::npos);
  EXPECT_NE(refusal(handed_cluster_token(dir + "/absent", nullptr))
                .find("--token-file " + dir + "/absent: cannot read it"),
            std::string::npos);
  const auto empty = secret_file(dir + "/empty", "\n", 0600);
  EXPECT_NE(refusal(handed_cluster_token(empty, nullptr)).find("--token-file " + empty + " is empty"),
            std::string::npos);
  const auto open = secret_file(dir + "/open", kGoodToken, 0666);
  EXPECT_NE(refusal(handed_cluster_token(open, nullptr))
                .find("other users may change it (mode 0666); run chmod go-w"),
            std::string::npos);
  const auto other = secret_file(dir + "/other", "fedcba9876543210fedcba9876543210", 0600);
  EXPECT_NE(refusal(handed_cluster_token(other, kGoodToken.c_str()))
                .find("--token-file " + other +
                      " and SPINDLE_CLUSTER_TOKEN hold different cluster tokens: give one"),
            std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace spindle::runtime
