// The folders the file door tests serve and fetch (a partition output with
// rank-0 and rank-1, a model folder, a secret beside them and a link to it),
// a door over them and a fetch request. Header-only, for tests/transport.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>

#include "transport/net/file_door.hpp"
#include "transport/net/file_fetch.hpp"

namespace spindle::transport::net::file_folders {

namespace fs = std::filesystem;
inline const std::string kToken = "a-cluster-token-of-32-characters";

inline std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void write_random(const fs::path& p, std::size_t n, unsigned seed) {
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

// A door over f's partition output ("dataset", rank N's rank-N) and model folder.
inline file_door_options door_options(const folders& f, const std::string& token = kToken,
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
  return o;
}

inline std::unique_ptr<file_door> start_door(const file_door_options& o) {
  auto door = file_door::start(o);
  EXPECT_TRUE(door.has_value()) << door.error().to_string();
  return door ? std::move(*door) : nullptr;
}

inline std::unique_ptr<file_door> open_door(const folders& f, const std::string& token = kToken,
                                            std::uint64_t max_bytes_per_s = 0) {
  return start_door(door_options(f, token, max_bytes_per_s));
}

inline fetch_request request(int port, const fs::path& base, const std::string& root = "dataset",
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

inline void expect_same_folder(const fs::path& a, const fs::path& b) {
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

}  // namespace spindle::transport::net::file_folders
