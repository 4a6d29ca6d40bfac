// Fetching a rank's folders from a file door over loopback: every file equal
// and checked, a cut resumed from the bytes on disk (within one fetch and
// across two), a wrong token refused, paths outside the door's folders
// refused, a byte flipped on the way fetched again, a damaged file at the door
// refused by name, and a half-fetched folder never in place.
#include "transport/net/file_fetch.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>

#include "tests/support/faulty_link.hpp"
#include "tests/support/file_bytes.hpp"
#include "transport/net/file_client.hpp"
#include "transport/net/file_door.hpp"

namespace spindle::transport::net {
namespace {

namespace fs = std::filesystem;
const std::string kToken = "a-cluster-token-of-32-characters";

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_random(const fs::path& p, std::size_t n, unsigned seed) {
  fs::create_directories(p.parent_path());
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = char(rng());
  std::ofstream(p, std::ios::binary) << s;
}

// A partition output (rank-0, rank-1) and a model folder, and a secret beside them.
struct folders {
  fs::path top;
  folders() {
    top = fs::temp_directory_path() /
          ("spindle_file_fetch_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(top);
    for (int r = 0; r < 2; ++r) {
      const auto d = top / "src" / "parts" / ("rank-" + std::to_string(r));
      write_random(d / "part_features.npy", 3'000'000 + 1000 * std::size_t(r), 10 + r);
      write_random(d / "graph" / "indices.npy", 200'000, 20 + r);
      std::ofstream(d / "metadata.json") << "{\"rank\": " << r << "}\n";
    }
    write_random(top / "src" / "model" / "weights.safetensors", 500'000, 30);
    std::ofstream(top / "src" / "model" / "model.toml") << "name = \"m\"\n";
    std::ofstream(top / "src" / "secret.txt") << "not to be served\n";
    fs::create_symlink(top / "src" / "secret.txt", top / "src" / "model" / "link.txt");
  }
  ~folders() { fs::remove_all(top); }
  fs::path src() const { return top / "src"; }
  fs::path dst(const std::string& name) const { return top / name; }
};

std::unique_ptr<file_door> open_door(const folders& f, const std::string& token = kToken,
                                     std::uint64_t max_bytes_per_s = 0) {
  file_door_options o;
  o.token = token;
  o.max_bytes_per_s = max_bytes_per_s;
  const std::string parts = (f.src() / "parts").string();
  o.roots.push_back({"dataset", parts, [parts](int rank) -> expected<std::string> {
                       const std::string unit = "rank-" + std::to_string(rank);
                       if (!fs::is_directory(parts + "/" + unit))
                         return make_error(errc::not_found, "holds no {}", unit);
                       return unit;
                     }});
  o.roots.push_back({"model", (f.src() / "model").string(), nullptr});
  auto door = file_door::start(o);
  EXPECT_TRUE(door.has_value()) << door.error().to_string();
  return std::move(*door);
}

fetch_request request(int port, const fs::path& base, const std::string& root = "dataset",
                      int rank = 1) {
  fetch_request r;
  r.peers = {"127.0.0.1:" + std::to_string(port)};
  r.token = kToken;
  r.root = root;
  r.rank = rank;
  r.base = base.string();
  r.wait_s = 5;
  return r;
}

void expect_same_folder(const fs::path& a, const fs::path& b) {
  std::size_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(a)) {
    if (!e.is_regular_file() || e.is_symlink()) continue;
    const auto rel = fs::relative(e.path(), a);
    EXPECT_EQ(read_all(e.path()), read_all(b / rel)) << rel;
    ++n;
  }
  std::size_t m = 0;
  for (const auto& e : fs::recursive_directory_iterator(b)) m += e.is_regular_file() ? 1 : 0;
  EXPECT_EQ(n, m) << "files in " << b;
}

TEST(file_fetch_test, fetches_a_rank_partition_and_a_model_with_every_file_checked) {
  folders f;
  auto door = open_door(f);
  auto got = fetch_folder(request(door->port(), f.dst("parts")));
  ASSERT_TRUE(got.has_value()) << got.error().to_string();
  EXPECT_EQ(got->target, (f.dst("parts") / "rank-1").string());
  EXPECT_EQ(got->files, 3u);
  EXPECT_EQ(got->refetched, 0u);
  expect_same_folder(f.src() / "parts" / "rank-1", f.dst("parts") / "rank-1");
  EXPECT_FALSE(fs::exists(f.dst("parts") / "rank-0"));  // only this rank's share
  EXPECT_FALSE(fs::exists(f.dst("parts") / ".rank-1.fetching"));
  auto model = fetch_folder(request(door->port(), f.dst("m"), "model"));
  ASSERT_TRUE(model.has_value()) << model.error().to_string();
  EXPECT_EQ(model->files, 2u);  // the link to a file outside the folder is not served
  EXPECT_FALSE(fs::exists(f.dst("m") / "link.txt"));
  EXPECT_EQ(read_all(f.dst("m") / "model.toml"), "name = \"m\"\n");
  auto none = fetch_folder(request(door->port(), f.dst("p2"), "dataset", 5));
  ASSERT_FALSE(none.has_value());
  EXPECT_NE(none.error().message().find("holds no rank-5"), std::string::npos)
      << none.error().message();
}

TEST(file_fetch_test, a_cut_midway_resumes_from_the_bytes_already_on_disk) {
  folders f;
  auto door = open_door(f);
  // The first connection is cut 1.5 MB into the 3 MB features file.
  testing::faulty_link link(door->port(), {{1'500'000, -1, false}});
  auto got = fetch_folder(request(link.port(), f.dst("parts")));
  ASSERT_TRUE(got.has_value()) << got.error().to_string();
  EXPECT_EQ(got->reconnects, 1u);
  EXPECT_GT(got->resumed_from, 1'000'000u);
  const auto total =
      3'001'000u + 200'000u + read_all(f.src() / "parts/rank-1/metadata.json").size();
  EXPECT_EQ(got->bytes, total);  // nothing came twice
  expect_same_folder(f.src() / "parts" / "rank-1", f.dst("parts") / "rank-1");
}

TEST(file_fetch_test, a_fetch_stopped_midway_leaves_no_folder_and_the_next_one_resumes) {
  folders f;
  auto door = open_door(f);
  {
    // Cut 1 MB in, then every reconnection refused: the fetch gives up.
    std::vector<testing::link_fault> faults{{1'000'000, -1, false}};
    for (int i = 0; i < 200; ++i) faults.push_back({0, -1, true});
    testing::faulty_link link(door->port(), faults);
    auto r = request(link.port(), f.dst("parts"));
    r.wait_s = 1;
    auto got = fetch_folder(r);
    ASSERT_FALSE(got.has_value());
    EXPECT_NE(got.error().message().find("127.0.0.1:" + std::to_string(link.port())),
              std::string::npos)
        << got.error().message();
  }
  EXPECT_FALSE(fs::exists(f.dst("parts") / "rank-1"));  // never taken as complete
  ASSERT_TRUE(fs::exists(f.dst("parts") / ".rank-1.fetching"));
  auto got = fetch_folder(request(door->port(), f.dst("parts")));
  ASSERT_TRUE(got.has_value()) << got.error().to_string();
  EXPECT_GT(got->resumed_from + 200'000u * got->kept, 900'000u);
  expect_same_folder(f.src() / "parts" / "rank-1", f.dst("parts") / "rank-1");
}

TEST(file_fetch_test, a_wrong_token_is_refused_and_nothing_is_written) {
  folders f;
  auto door = open_door(f, "another-clusters-token-32-chars!");
  auto got = fetch_folder(request(door->port(), f.dst("parts")));
  ASSERT_FALSE(got.has_value());
  EXPECT_NE(got.error().message().find("refused the cluster token"), std::string::npos)
      << got.error().message();
  EXPECT_NE(got.error().message().find("127.0.0.1:" + std::to_string(door->port())),
            std::string::npos);
  EXPECT_FALSE(fs::exists(f.dst("parts")));
  for (int i = 0; i < 50 && door->stats().refused == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_GE(door->stats().refused, 1u);
  EXPECT_EQ(door->stats().sessions, 0u);
}

TEST(file_fetch_test, paths_outside_the_served_folders_are_refused) {
  folders f;
  auto door = open_door(f);
  auto c = file_client::connect("127.0.0.1", door->port(), kToken);
  ASSERT_TRUE(c.has_value()) << c.error().to_string();
  auto m = c->manifest("model", 0);
  ASSERT_TRUE(m.has_value()) << m.error().to_string();
  EXPECT_EQ(m->find("link.txt"), nullptr);
  std::string got;
  auto sink = [&](const char* p, std::size_t n) {
    got.append(p, n);
    return status::ok();
  };
  for (const auto& [unit, path] :
       std::vector<std::pair<std::string, std::string>>{{".", "../secret.txt"},
                                                        {".", (f.src() / "secret.txt").string()},
                                                        {"..", "secret.txt"},
                                                        {".", "sub/../../secret.txt"},
                                                        {".", "link.txt"}}) {
    status st = c->get("model", unit, path, 0, sink);
    EXPECT_FALSE(st.is_ok()) << path;
    EXPECT_NE(st.message().find("refused"), std::string::npos) << st.message();
  }
  EXPECT_TRUE(got.empty());
  EXPECT_TRUE(c->get("model", ".", "model.toml", 0, sink).is_ok());  // the connection still serves
  EXPECT_EQ(got, "name = \"m\"\n");
  EXPECT_EQ(door->stats().requests_refused, 5u);
}

TEST(file_fetch_test, a_byte_flipped_on_the_way_is_caught_and_the_file_fetched_again) {
  folders f;
  auto door = open_door(f);
  testing::faulty_link link(door->port(), {{0, 2'000'000, false}});
  auto got = fetch_folder(request(link.port(), f.dst("parts")));
  ASSERT_TRUE(got.has_value()) << got.error().to_string();
  EXPECT_EQ(got->refetched, 1u);
  expect_same_folder(f.src() / "parts" / "rank-1", f.dst("parts") / "rank-1");
}

TEST(file_fetch_test, a_file_damaged_at_the_door_is_refused_by_name) {
  folders f;
  auto door = open_door(f);
  ASSERT_TRUE(fetch_folder(request(door->port(), f.dst("first"))).has_value());  // hashed
  {
    // Same size, one byte changed: the door's manifest no longer holds for it.
    std::fstream file(f.src() / "parts/rank-1/graph/indices.npy",
                      std::ios::in | std::ios::out | std::ios::binary);
    testing::flip_byte(file, 1234, 0x01);
  }
  auto got = fetch_folder(request(door->port(), f.dst("parts")));
  ASSERT_FALSE(got.has_value());
  EXPECT_EQ(got.error().code(), errc::corrupt_data);
  EXPECT_NE(got.error().message().find("graph/indices.npy"), std::string::npos)
      << got.error().message();
  EXPECT_NE(got.error().message().find("127.0.0.1:" + std::to_string(door->port())),
            std::string::npos);
  EXPECT_FALSE(fs::exists(f.dst("parts") / "rank-1"));
}

TEST(file_fetch_test, a_link_swapped_in_after_the_manifest_is_not_followed) {
  folders f;
  auto door = open_door(f);
  ASSERT_TRUE(fetch_folder(request(door->port(), f.dst("first"))).has_value());  // hashed
  // An outside file of the same size behind a link where the manifest's file was.
  const auto target = f.src() / "parts/rank-1/graph/indices.npy";
  fs::copy_file(target, f.top / "outside.npy");
  fs::remove(target);
  fs::create_symlink(f.top / "outside.npy", target);
  auto got = fetch_folder(request(door->port(), f.dst("parts")));
  ASSERT_FALSE(got.has_value());
  EXPECT_NE(got.error().message().find("graph/indices.npy: changed since its manifest"),
            std::string::npos)
      << got.error().message();
  EXPECT_FALSE(fs::exists(f.dst("parts") / "rank-1"));
}

TEST(file_fetch_test, a_second_door_serves_when_the_first_cannot_be_reached) {
  folders f;
  auto door = open_door(f);
  int closed_port = 0;
  {
    auto gone = open_door(f);
    closed_port = gone->port();
  }
  auto r = request(door->port(), f.dst("parts"));
  r.peers.insert(r.peers.begin(), "127.0.0.1:" + std::to_string(closed_port));
  auto got = fetch_folder(r);
  ASSERT_TRUE(got.has_value()) << got.error().to_string();
  EXPECT_EQ(got->peer, "127.0.0.1:" + std::to_string(door->port()));
}

TEST(file_fetch_test, a_rate_cap_paces_the_door) {
  folders f;
  auto door = open_door(f, kToken, 2'000'000);  // 3.2 MB at 2 MB/s: 1.6 s, less one chunk
  const auto t0 = std::chrono::steady_clock::now();
  auto got = fetch_folder(request(door->port(), f.dst("parts")));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(got.has_value()) << got.error().to_string();
  EXPECT_GE(s, 1.3);
  expect_same_folder(f.src() / "parts" / "rank-1", f.dst("parts") / "rank-1");
}

TEST(file_fetch_test, a_folder_already_on_disk_is_used_only_when_it_equals_the_doors) {
  folders f;
  auto door = open_door(f);
  ASSERT_TRUE(fetch_folder(request(door->port(), f.dst("m"), "model")).has_value());
  std::ofstream(f.dst("m") / "graph.log") << "written by the rank\n";  // beside: allowed
  auto same = fetch_folder(request(door->port(), f.dst("m"), "model"));
  ASSERT_TRUE(same.has_value()) << same.error().to_string();
  EXPECT_EQ(same->files, 0u);
  EXPECT_EQ(same->kept, 2u);
  // A stale copy (the door's model changed since) is refused by name, left as it is.
  write_random(f.src() / "model" / "weights.safetensors", 500'000, 31);
  auto door2 = open_door(f);  // a door started after the change
  auto stale = fetch_folder(request(door2->port(), f.dst("m"), "model"));
  ASSERT_FALSE(stale.has_value());
  EXPECT_NE(stale.error().message().find(
                "is on this rank's disk, and its weights.safetensors differs from file door"),
            std::string::npos)
      << stale.error().message();
  EXPECT_TRUE(fs::exists(f.dst("m") / "model.toml"));
  // A folder missing a file, and an empty one (a fresh volume's mount point).
  fs::create_directories(f.dst("parts") / "rank-1");
  std::ofstream(f.dst("parts") / "rank-1" / "metadata.json") << "{\"rank\": 1}\n";
  auto partial = fetch_folder(request(door2->port(), f.dst("parts")));
  ASSERT_FALSE(partial.has_value());
  EXPECT_NE(partial.error().message().find("graph/indices.npy is missing"), std::string::npos)
      << partial.error().message();
  fs::remove_all(f.dst("parts") / "rank-1");
  fs::create_directories(f.dst("parts") / "rank-1");
  auto filled = fetch_folder(request(door2->port(), f.dst("parts")));
  ASSERT_TRUE(filled.has_value()) << filled.error().to_string();
  expect_same_folder(f.src() / "parts" / "rank-1", f.dst("parts") / "rank-1");
}

}  // namespace
}  // namespace spindle::transport::net
