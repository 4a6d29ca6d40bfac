// The model repository (Triton's layout, DIR/NAME/VERSION/): which folders are
// models and versions, versions ordered as numbers, the latest version's
// version_policy choosing what is served, and errors naming the repository,
// the model, its versions or the model.toml at fault.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "nn/model.hpp"
#include "runtime/model_repository.hpp"

namespace spindle::runtime {
namespace {

namespace fs = std::filesystem;

// DIR/sage/{1,2,10}/ with a model (10's version_policy: `policy`), and folders
// that are not versions or not models.
std::string make_repository(const char* name, const std::string& policy) {
  const auto dir = (fs::temp_directory_path() /
                    (std::string("spindle_repo_") + name + "_" + std::to_string(::getpid())))
                       .string();
  fs::remove_all(dir);
  for (int v : {1, 2, 10}) {
    config::model_desc d;
    d.name = "sage";
    d.arch = config::model_arch::graphsage;
    d.in = 8, d.hidden = 8, d.out = 3, d.layers = 2, d.fanouts = {5, 5};
    if (v == 10) d.version_policy = policy;
    EXPECT_TRUE(nn::init_model(d, std::uint64_t(v), dir + "/sage/" + std::to_string(v)).is_ok());
  }
  fs::create_directories(dir + "/sage/abc");  // not a version number
  fs::create_directories(dir + "/sage/0");    // versions start at 1
  fs::create_directories(dir + "/sage/3");    // no model.toml
  fs::create_directories(dir + "/empty");     // a folder without versions
  std::ofstream(dir + "/README") << "not a model\n";
  return dir;
}

TEST(model_repository_test, only_numbered_folders_with_a_model_toml_are_versions) {
  const auto dir = make_repository("scan", "");
  auto all = scan_repository(dir);
  ASSERT_TRUE(all.has_value()) << all.error().to_string();
  ASSERT_EQ(all->size(), 1u);  // "empty" and README are not models
  std::vector<int> versions;
  for (const auto& [v, path] : all->at("sage").versions) versions.push_back(v);
  EXPECT_EQ(versions, (std::vector<int>{1, 2, 10}));
  auto picked = pick_repository_versions(dir, "sage");
  ASSERT_TRUE(picked.has_value()) << picked.error().to_string();
  ASSERT_EQ(picked->size(), 1u);
  EXPECT_EQ((*picked)[0].version, 10);  // latest by number, not by name ("2" > "10")
  EXPECT_EQ((*picked)[0].path, dir + "/sage/10");
  fs::remove_all(dir);
}

TEST(model_repository_test, the_latest_versions_policy_picks_what_is_served) {
  const auto dir = make_repository("policy", "specific:1,2");
  auto picked = pick_repository_versions(dir, "sage");
  ASSERT_TRUE(picked.has_value()) << picked.error().to_string();
  ASSERT_EQ(picked->size(), 2u);
  EXPECT_EQ((*picked)[0].version, 2);  // highest first
  EXPECT_EQ((*picked)[1].version, 1);
  fs::remove_all(dir);
}

TEST(model_repository_test, errors_name_the_repository_the_model_and_the_policy) {
  const auto gone = make_repository("missing", "specific:7");
  auto unknown = pick_repository_versions(gone, "gat");
  ASSERT_FALSE(unknown.has_value());
  EXPECT_NE(unknown.error().message().find("no model 'gat'"), std::string::npos);
  EXPECT_NE(unknown.error().message().find("it has: sage"), std::string::npos)
      << unknown.error().message();
  auto policy = pick_repository_versions(gone, "sage");
  ASSERT_FALSE(policy.has_value());
  EXPECT_NE(policy.error().message().find(gone + "/sage/10/model.toml"), std::string::npos)
      << policy.error().message();
  EXPECT_NE(policy.error().message().find("no version 7 (have: 10, 2, 1)"), std::string::npos)
      << policy.error().message();
  auto not_dir = scan_repository(gone + "/README");
  ASSERT_FALSE(not_dir.has_value());
  EXPECT_NE(not_dir.error().message().find("not a directory"), std::string::npos);
  fs::remove_all(gone);
}

}  // namespace
}  // namespace spindle::runtime
