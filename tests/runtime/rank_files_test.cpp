// The door folders a rank fetches (runtime/rank_files): a recommendation model
// and a model repository fetched from a node's file door version by version, a
// version added at the door later fetched alone, a version on this disk that
// differs refused by name, and words that would leave the repository refused.
#include "runtime/rank_files.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "transport/net/file_client.hpp"

namespace spindle::runtime {
namespace {

namespace fs = std::filesystem;
const std::string kToken = "a-cluster-token-of-32-characters";

struct scratch {
  fs::path top;
  explicit scratch(const char* name)
      : top(fs::temp_directory_path() /
            (std::string("spindle_rank_files_") + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(top);
  }
  ~scratch() { fs::remove_all(top); }
  // A version folder of `name` at `dir`, its weights naming the version.
  void version(const fs::path& dir, const std::string& name, int v, const std::string& w = "") {
    const auto d = dir / name / std::to_string(v);
    fs::create_directories(d);
    std::ofstream(d / "model.toml") << "name = \"" << name << "\"\n";
    std::ofstream(d / "weights.safetensors") << (w.empty() ? "weights of " + std::to_string(v) : w);
  }
};

std::string read_all(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::unique_ptr<transport::net::file_door> door_over(const rank_folders& d) {
  rank_files_args a;
  a.files = "127.0.0.1:0";
  auto door = open_file_door(a, d, kToken);
  EXPECT_TRUE(door.has_value()) << door.error().to_string();
  return door ? std::move(*door) : nullptr;
}

rank_files_args fetching_from(const transport::net::file_door& door) {
  rank_files_args a;
  a.fetch_from = {"127.0.0.1:" + std::to_string(door.port())};
  a.fetch_wait_s = 5;
  return a;
}

TEST(rank_files_test, a_repository_and_a_rec_model_are_fetched_and_new_versions_follow) {
  scratch s("fetch");
  const auto src = s.top / "src", dst = s.top / "dst";
  s.version(src / "repo", "late", 1);
  s.version(src / "repo", "late", 2);
  s.version(src / "repo", "other", 1);
  fs::create_directories(src / "ncf");
  std::ofstream(src / "ncf" / "model.toml") << "name = \"ncf\"\n";
  auto door = door_over({"", "", "", {{"ncf", (src / "ncf").string()}}, (src / "repo").string()});
  ASSERT_TRUE(door);
  const auto a = fetching_from(*door);
  rank_folders here{"", "", "", {{"ncf", (dst / "ncf").string()}}, (dst / "repo").string()};
  auto st = fetch_missing(a, here, 1, kToken);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(read_all(dst / "ncf" / "model.toml"), "name = \"ncf\"\n");
  for (const char* v : {"late/1", "late/2", "other/1"})
    EXPECT_EQ(read_all(dst / "repo" / v / "weights.safetensors"),
              read_all(src / "repo" / v / "weights.safetensors"))
        << v;
  // A version added at the door: fetched alone, for the model named only.
  s.version(src / "repo", "late", 3);
  s.version(src / "repo", "other", 2);
  st = fetch_new_versions(a, (dst / "repo").string(), "late", kToken);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(read_all(dst / "repo/late/3/weights.safetensors"), "weights of 3");
  EXPECT_FALSE(fs::exists(dst / "repo/other/2"));
  // A version on this disk that differs from the door's is refused by name.
  s.version(dst / "repo", "other", 2, "another rank's version 2");
  st = fetch_missing(a, here, 1, kToken);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("(other/2)"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("differs from file door"), std::string::npos) << st.message();
  EXPECT_EQ(read_all(dst / "repo/other/2/weights.safetensors"), "another rank's version 2");
}

TEST(rank_files_test, a_repository_door_serves_versions_only) {
  scratch s("words");
  const auto src = s.top / "src";
  s.version(src / "repo", "late", 1);
  std::ofstream(s.top / "src" / "secret.txt") << "not to be served\n";
  auto door = door_over({"", "", "", {}, (src / "repo").string()});
  ASSERT_TRUE(door);
  auto c = transport::net::file_client::connect("127.0.0.1", door->port(), kToken);
  ASSERT_TRUE(c.has_value()) << c.error().to_string();
  for (const char* word : {"..", "../secret.txt", "late", "late/1/..", "late/x", "late/01",
                           "/etc/1", "late/2", "late/1/2"}) {
    auto m = c->manifest("model-repository", word);
    EXPECT_FALSE(m.has_value()) << word;
  }
  auto one = c->manifest("model-repository", "late/1");
  ASSERT_TRUE(one.has_value()) << one.error().to_string();
  EXPECT_EQ(one->unit, "late/1");
  EXPECT_EQ(one->files.size(), 2u);
}

// A model loaded at run time from a folder: a door serves it by the model's name
// (and nothing else under that root), a rank lacking the folder fetches it to the
// place the load names, one already there is used as it is, and an unloaded
// model's folder is refused, also to a fetch holding its earlier manifest.
TEST(rank_files_test, a_loaded_models_folder_is_served_by_name_and_fetched_where_the_load_names) {
  scratch s("loaded");
  const auto src = s.top / "src" / "models" / "sage-v7", dst = s.top / "dst" / "elsewhere" / "m";
  fs::create_directories(src);
  std::ofstream(src / "model.toml") << "name = \"sage\"\n";
  std::ofstream(src / "weights.safetensors") << "the weights";
  std::ofstream(s.top / "src" / "models" / "secret.txt") << "not to be served\n";
  auto loaded = std::make_shared<loaded_folders>();
  loaded->add("sage", src.string());
  rank_files_args a;
  a.files = "127.0.0.1:0";
  auto door = open_file_door(a, {}, kToken, loaded);
  ASSERT_TRUE(door.has_value()) << door.error().to_string();
  auto c = transport::net::file_client::connect("127.0.0.1", (*door)->port(), kToken);
  ASSERT_TRUE(c.has_value()) << c.error().to_string();
  for (const char* word : {"", ".", "..", "../secret.txt", "sage/..", "sage/x", "other", "/etc"})
    EXPECT_FALSE(c->manifest("loaded-model", word).has_value()) << word;
  auto m = c->manifest("loaded-model", "sage");
  ASSERT_TRUE(m.has_value()) << m.error().to_string();
  EXPECT_EQ(m->files.size(), 2u);
  std::string got;
  auto sink = [&](const char* p, std::size_t n) {
    got.append(p, n);
    return status::ok();
  };
  EXPECT_FALSE(c->get("loaded-model", "sage", "../secret.txt", 0, sink).is_ok());
  ASSERT_TRUE(c->get("loaded-model", "sage", "weights.safetensors", 0, sink).is_ok());
  EXPECT_EQ(got, "the weights");
  // Fetched to the folder the load names on this rank, whatever its name there.
  const auto f = fetching_from(**door);
  auto st = fetch_loaded_folder(f, "sage", dst.string(), kToken);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(read_all(dst / "weights.safetensors"), "the weights");
  // A folder on this disk is the operator's: used as it is, nothing fetched.
  std::ofstream(dst / "weights.safetensors") << "this rank's own";
  EXPECT_TRUE(fetch_loaded_folder(f, "sage", dst.string(), kToken).is_ok());
  EXPECT_EQ(read_all(dst / "weights.safetensors"), "this rank's own");
  // Unloaded: refused by name, and so is a file of its earlier manifest.
  loaded->remove("sage");
  EXPECT_FALSE(c->manifest("loaded-model", "sage").has_value());
  EXPECT_FALSE(c->get("loaded-model", "sage", "weights.safetensors", 0, sink).is_ok());
  auto brief = f;
  brief.fetch_wait_s = 1;  // a door that has not loaded it is asked again this long
  st = fetch_loaded_folder(brief, "sage", (s.top / "dst" / "again").string(), kToken);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("model 'sage'"), std::string::npos) << st.message();
  EXPECT_FALSE(fs::exists(s.top / "dst" / "again"));
}

}  // namespace
}  // namespace spindle::runtime
