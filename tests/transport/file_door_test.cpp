// The file door against strangers and a changing disk, over loopback: idle
// connections from one address (or two) do not keep a peer with the token
// waiting, an idle stranger is closed within the proof deadline, a peer past
// the session slots waits for one; a file changed on the door's disk is hashed
// again for later fetches and a fetch in progress is refused naming it; errors
// sent to a peer name no path of the door's disk; a port that accepts and
// stays silent is refused at once as not a file door.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/loopback_socket.hpp"
#include "tests/transport/file_folders.hpp"
#include "transport/net/file_client.hpp"
#include "transport/net/file_door.hpp"
#include "transport/net/file_fetch.hpp"
#include "transport/net/listen_socket.hpp"

namespace spindle::transport::net {
namespace {

using namespace file_folders;
using door_test_clock = std::chrono::steady_clock;

double seconds_since(door_test_clock::time_point t0) {
  return std::chrono::duration<double>(door_test_clock::now() - t0).count();
}

// A connection to 127.0.0.1:port from source address `from` (any of 127/8).
int dial_from(const char* from, int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in src{}, dst{};
  src.sin_family = dst.sin_family = AF_INET;
  ::inet_pton(AF_INET, from, &src.sin_addr);
  dst.sin_port = htons(std::uint16_t(port));
  dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Rewrites `p` with other bytes of the same size, its mtime moved on by 2 s
// (an update, whatever the file system's timestamp granularity).
void rewrite(const fs::path& p, unsigned seed) {
  const auto mtime = fs::last_write_time(p);
  write_random(p, fs::file_size(p), seed);
  fs::last_write_time(p, mtime + std::chrono::seconds(2));
}

TEST(file_door_test, idle_strangers_do_not_keep_a_peer_with_the_token_waiting) {
  folders f;
  auto door = open_door(f);
  std::vector<int> strangers;  // more than the door's 8 slots, from two addresses
  for (const char* from : {"127.0.0.2", "127.0.0.1"})
    for (int i = 0; i < 20; ++i) {
      const int fd = dial_from(from, door->port());
      ASSERT_GE(fd, 0) << from;
      strangers.push_back(fd);
    }
  const auto t0 = door_test_clock::now();
  auto got = fetch_folder(request(door->port(), f.dst("parts")));
  const double took = seconds_since(t0);
  ASSERT_TRUE(got.has_value()) << got.error().to_string();
  expect_same_folder(f.src() / "parts" / "rank-1", f.dst("parts") / "rank-1");
  // Served at once: not after the strangers' proof deadline ran out.
  EXPECT_LT(took, 3.0) << "the fetch waited for strangers";
  // 8 unproven per address: each address's 12 oldest made room, then the fetch's.
  EXPECT_GE(door->stats().evicted, 25u);
  for (int fd : strangers) ::close(fd);
}

TEST(file_door_test, an_idle_stranger_is_closed_within_the_proof_deadline) {
  folders f;
  auto door = open_door(f);
  const int fd = testing::dial_loopback(door->port());
  ASSERT_GE(fd, 0);
  const auto t0 = door_test_clock::now();
  const std::string hello = testing::receive_all(fd, 10);  // the challenge, then the close
  const double took = seconds_since(t0);
  ::close(fd);
  EXPECT_EQ(hello.size(), 40u);
  EXPECT_LT(took, 4.0) << "an idle stranger held its connection " << took << " s";
  EXPECT_GE(took, 1.5);  // the 2 s deadline, not an immediate close
  for (int i = 0; i < 50 && door->stats().refused == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(door->stats().refused, 1u);
}

TEST(file_door_test, a_peer_past_the_session_slots_waits_for_one) {
  folders f;
  auto o = door_options(f, kToken, 4'000'000);  // each 3.2 MB partition about 0.8 s
  o.max_connections = 1;
  auto door = start_door(o);
  std::vector<expected<fetch_report>> got(2, make_error(errc::internal, "not run"));
  std::vector<std::thread> fetches;
  for (int i = 0; i < 2; ++i)
    fetches.emplace_back([&, i] {
      got[i] = fetch_folder(request(door->port(), f.dst("p" + std::to_string(i)), "dataset", i));
    });
  for (auto& t : fetches) t.join();
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(got[i].has_value()) << got[i].error().to_string();
    EXPECT_EQ(got[i]->reconnects, 0u);
    const std::string unit = "rank-" + std::to_string(i);
    expect_same_folder(f.src() / "parts" / unit, f.dst("p" + std::to_string(i)) / unit);
  }
}

TEST(file_door_test, a_file_changed_on_the_doors_disk_is_served_as_it_is_now) {
  folders f;
  auto door = open_door(f);
  const auto weights = f.src() / "model" / "weights.safetensors";
  ASSERT_TRUE(fetch_folder(request(door->port(), f.dst("m1"), "model")).has_value());
  rewrite(weights, 31);  // written in place: a new mtime
  auto second = fetch_folder(request(door->port(), f.dst("m2"), "model"));
  ASSERT_TRUE(second.has_value()) << second.error().to_string();
  EXPECT_EQ(read_all(f.dst("m2") / "weights.safetensors"), read_all(weights));
  EXPECT_EQ(door->stats().files_changed, 1u);
  ASSERT_TRUE(fetch_folder(request(door->port(), f.dst("m3"), "model")).has_value());
  EXPECT_EQ(door->stats().files_changed, 1u);  // noticed (and logged) once
  // Replaced by a rename with its mtime kept (`cp -p` then `mv`): a new inode.
  const auto mtime = fs::last_write_time(weights);
  write_random(f.top / "new.safetensors", fs::file_size(weights), 32);
  fs::last_write_time(f.top / "new.safetensors", mtime);
  fs::rename(f.top / "new.safetensors", weights);
  auto fourth = fetch_folder(request(door->port(), f.dst("m4"), "model"));
  ASSERT_TRUE(fourth.has_value()) << fourth.error().to_string();
  EXPECT_EQ(read_all(f.dst("m4") / "weights.safetensors"), read_all(weights));
  EXPECT_EQ(door->stats().files_changed, 2u);
}

TEST(file_door_test, a_fetch_in_progress_when_a_file_changes_is_refused_naming_it) {
  folders f;
  auto door = open_door(f, kToken, 1'000'000);  // the 3 MB file takes 3 s
  const auto features = f.src() / "parts" / "rank-1" / "part_features.npy";
  const auto part = f.dst("parts") / ".rank-1.fetching" / "part_features.npy.part";
  std::atomic<bool> done{false};
  expected<fetch_report> got = make_error(errc::internal, "not run");
  std::thread fetch([&] {
    got = fetch_folder(request(door->port(), f.dst("parts")));
    done = true;
  });
  std::error_code ec;
  while (!done && !(fs::exists(part, ec) && fs::file_size(part, ec) > 300'000))
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  rewrite(features, 77);
  fetch.join();
  ASSERT_FALSE(got.has_value()) << "the fetch ended before the change";
  EXPECT_EQ(got.error().code(), errc::corrupt_data) << got.error().to_string();
  const std::string& why = got.error().message();
  EXPECT_NE(why.find("changed on the door's disk"), std::string::npos) << why;
  EXPECT_NE(why.find("part_features.npy"), std::string::npos) << why;
  EXPECT_NE(why.find("127.0.0.1:" + std::to_string(door->port())), std::string::npos) << why;
  EXPECT_FALSE(fs::exists(f.dst("parts") / "rank-1"));
  EXPECT_FALSE(fs::exists(part)) << "old bytes of the changed file kept";
  // Fetched again: the current copy, whole.
  auto again = fetch_folder(request(door->port(), f.dst("parts")));
  ASSERT_TRUE(again.has_value()) << again.error().to_string();
  expect_same_folder(f.src() / "parts" / "rank-1", f.dst("parts") / "rank-1");
}

TEST(file_door_test, errors_sent_to_a_peer_name_no_path_of_the_doors_disk) {
  folders f;
  auto o = door_options(f);
  const std::string parts = (f.src() / "parts").string();
  o.roots[0].unit_for = [parts](int rank) -> expected<std::string> {  // as rank_files words it
    return make_error(errc::not_found, "{} holds no rank-{} partition (nor a whole dataset)",
                      parts, rank);
  };
  o.roots[1].dir = (f.src() / "gone").string();
  auto door = start_door(o);
  auto c = file_client::connect("127.0.0.1", door->port(), kToken);
  ASSERT_TRUE(c.has_value()) << c.error().to_string();
  auto none = c->manifest("dataset", 5);
  ASSERT_FALSE(none.has_value());
  EXPECT_NE(none.error().message().find("dataset holds no rank-5 partition"), std::string::npos)
      << none.error().message();
  auto gone = c->manifest("model", 0);
  ASSERT_FALSE(gone.has_value());
  EXPECT_NE(gone.error().message().find("model: not a folder"), std::string::npos)
      << gone.error().message();
  for (const auto& why : {none.error().message(), gone.error().message()})
    EXPECT_EQ(why.find(f.top.string()), std::string::npos) << "a path of the door's disk: " << why;
}

TEST(file_door_test, a_port_that_accepts_and_stays_silent_is_not_a_file_door) {
  auto fd = listen_socket("127.0.0.1", 0, "silent port");
  ASSERT_TRUE(fd.has_value()) << fd.error().to_string();
  const int port = local_port(*fd);
  std::atomic<bool> stop{false};
  std::thread silent([&] {  // accepts, reads nothing, sends nothing
    std::vector<int> held;
    while (!stop) {
      pollfd p{*fd, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      std::string peer;
      if (const int c = accept_peer(*fd, peer); c >= 0) held.push_back(c);
    }
    for (int c : held) ::close(c);
  });
  folders f;
  auto r = request(port, f.dst("parts"));
  r.wait_s = 60;
  const auto t0 = door_test_clock::now();
  auto got = fetch_folder(r);
  const double took = seconds_since(t0);
  stop = true;
  silent.join();
  ::close(*fd);
  ASSERT_FALSE(got.has_value());
  const std::string& why = got.error().message();
  EXPECT_NE(why.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << why;
  EXPECT_NE(why.find("is not a Spindle file door"), std::string::npos) << why;
  EXPECT_LT(took, 15.0) << "waited " << took << " s of --fetch-wait-s 60";
  EXPECT_FALSE(fs::exists(f.dst("parts")));
}

}  // namespace
}  // namespace spindle::transport::net
