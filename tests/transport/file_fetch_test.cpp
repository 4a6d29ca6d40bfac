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
#include "tests/transport/file_folders.hpp"
#include "transport/net/file_client.hpp"
#include "transport/net/file_door.hpp"

namespace spindle::transport::net {
namespace {

using namespace file_folders;

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
  const auto damaged = f.src() / "parts/rank-1/graph/indices.npy";
  const auto mtime = fs::last_write_time(damaged);
  {
    // Same size, one byte changed, the mtime put back: damage the door's stat
    // check cannot see (a file written anew is hashed again, file_door_test).
    std::fstream file(damaged, std::ios::in | std::ios::out | std::ios::binary);
    testing::flip_byte(file, 1234, 0x01);
  }
  fs::last_write_time(damaged, mtime);
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
  auto c = file_client::connect("127.0.0.1", door->port(), kToken);
  ASSERT_TRUE(c.has_value()) << c.error().to_string();
  auto m = c->manifest("dataset", 1);
  ASSERT_TRUE(m.has_value()) << m.error().to_string();
  const file_entry* e = m->find("graph/indices.npy");
  ASSERT_NE(e, nullptr);
  // An outside file of the same size behind a link where the manifest's file was.
  const auto target = f.src() / "parts/rank-1/graph/indices.npy";
  fs::copy_file(target, f.top / "outside.npy");
  fs::remove(target);
  fs::create_symlink(f.top / "outside.npy", target);
  std::string got;
  status st = c->get(
      "dataset", "rank-1", "graph/indices.npy", 0,
      [&](const char* p, std::size_t n) {
        got.append(p, n);
        return status::ok();
      },
      e->sha256);
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("graph/indices.npy is gone from the door's disk"), std::string::npos)
      << st.message();
  EXPECT_TRUE(got.empty());
  // A new fetch gets the folder as it is now: without the link's target.
  auto now = fetch_folder(request(door->port(), f.dst("parts")));
  ASSERT_TRUE(now.has_value()) << now.error().to_string();
  EXPECT_FALSE(fs::exists(f.dst("parts") / "rank-1" / "graph" / "indices.npy"));
  EXPECT_TRUE(fs::exists(f.dst("parts") / "rank-1" / "part_features.npy"));
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
