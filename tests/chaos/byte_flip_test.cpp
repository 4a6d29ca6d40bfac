// Chaos: 200 random byte flips of every input file kind (a dataset's metadata
// and arrays, model.toml and safetensors weights, a topology TOML, a PSGS
// calibration), each read by the command that takes it. Every run must end
// normally: exit 0 (the flip did not matter, or a checksum was not asked for),
// or exit 1 with an error naming the file or its folder. Never a crash, a hang
// or an error that names nothing. Seeds are fixed; the counts are printed.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/subprocess.hpp"
#include "graph/prepare.hpp"
#include "nn/model.hpp"
#include "nn/ops.hpp"
#include "tests/chaos/chaos_server.hpp"
#include "tests/graph/test_util.hpp"
#include "tests/support/file_bytes.hpp"
#include "tests/support/spindle_cli.hpp"

namespace spindle {
namespace {

namespace fs = std::filesystem;

testing::cli_outcome run(const std::vector<std::string>& args) {
  return testing::run_spindle_cli(args, 60);
}

void flip_bytes(const std::string& path, std::mt19937_64& rng) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  const auto size = std::uint64_t(testing::size_of(f));
  if (size == 0) return;
  const int flips = 1 + int(rng() % 4);
  for (int i = 0; i < flips; ++i) {
    const auto at = std::streamoff(rng() % size);
    testing::flip_byte(f, at, char(1 + rng() % 255));
  }
}

struct kind {
  std::string name;
  std::string file;                                // the pristine copy flipped each time
  std::function<std::vector<std::string>()> args;  // the command that reads it
  std::string names;                               // what an error must name
  int flips = 200;
};

TEST(chaos_byte_flip_test, every_input_kind_survives_200_flips_with_a_named_error_or_success) {
  const std::string dir = graph::testing::temp_dir("chaos_flip");
  make_small_gnn(dir, 8, 8, 3);
  std::ofstream(dir + "/topo.toml") << "[[server]]\nname = \"a\"\nhost = \"127.0.0.1\"\n"
                                       "memory = 100000\n[[server]]\nname = \"b\"\n"
                                       "host = \"127.0.0.1\"\nmemory = 100000\n";
  ASSERT_EQ(run({"calibrate", dir + "/g", "--model", dir + "/m", "--batches", "20", "--out",
                 dir + "/cal.json", "--plot", dir + "/cal.png"})
                .code,
            0);
  const std::string g = dir + "/g", m = dir + "/m";
  auto dataset_args = [g] { return std::vector<std::string>{"info", g, "--verify"}; };
  std::vector<kind> kinds = {
      {"metadata.json", g + "/metadata.json", dataset_args, "metadata.json"},
      {"indptr.npy", g + "/indptr.npy", dataset_args, "indptr.npy"},
      {"indices.npy", g + "/indices.npy", dataset_args, "indices.npy"},
      {"features.npy", g + "/features.npy", dataset_args, "features.npy"},
      {"psgs.npy", g + "/psgs.npy", dataset_args, "psgs.npy"},
      {"model.toml", m + "/model.toml",
       [m] {
         return std::vector<std::string>{"model", "info", m};
       },
       "model.toml"},
      {"weights.safetensors", m + "/weights.safetensors",
       [m] {
         return std::vector<std::string>{"model", "info", m};
       },
       "weights.safetensors"},
      {"topology TOML", dir + "/topo.toml",
       [g, dir] {
         return std::vector<std::string>{"place", g, "--topology", dir + "/topo.toml"};
       },
       "topo.toml"},
      {"calibration JSON", dir + "/cal.json",
       [g, m, dir] {
         return std::vector<std::string>{
             "serve",           "--dataset",  g,  "--model", m, "--calibration",
             dir + "/cal.json", "--workload", "1"};
       },
       "cal.json", 40},  // each run starts a server: fewer flips
  };
  std::mt19937_64 rng(2026);
  for (const auto& k : kinds) {
    const std::string pristine = k.file + ".pristine";
    fs::copy_file(k.file, pristine, fs::copy_options::overwrite_existing);
    int ok = 0, named = 0;
    for (int i = 0; i < k.flips; ++i) {
      fs::copy_file(pristine, k.file, fs::copy_options::overwrite_existing);
      flip_bytes(k.file, rng);
      const auto r = run(k.args());
      if (r.code == 0) {
        ++ok;
        continue;
      }
      ASSERT_EQ(r.code, 1) << k.name << " flip " << i << ": ended with " << r.code << "\n" << r.out;
      EXPECT_NE(r.out.find("error"), std::string::npos) << k.name << " flip " << i << "\n" << r.out;
      const bool names_it =
          r.out.find(k.names) != std::string::npos ||
          r.out.find(fs::path(k.file).parent_path().string()) != std::string::npos;
      EXPECT_TRUE(names_it) << k.name << " flip " << i << ": the error names neither the file nor "
                            << "its folder\n"
                            << r.out;
      named += names_it;
    }
    fs::copy_file(pristine, k.file, fs::copy_options::overwrite_existing);
    std::printf("%s: %d flips, %d still read fine, %d refused with a named error, 0 crashes\n",
                k.name.c_str(), k.flips, ok, named);
  }
}

}  // namespace
}  // namespace spindle

namespace spindle {
namespace {

// serve verifies the data it maps before serving: one byte flipped in the
// features (which `open` alone cannot tell from a real value) is refused at
// start, naming the file, instead of answered; --no-verify-data skips the
// checksums for a dataset too large to hash, and says so.
TEST(chaos_byte_flip_test, serve_refuses_altered_data_at_start) {
  const std::string dir = graph::testing::temp_dir("chaos_altered");
  make_small_gnn(dir, 8, 8, 3);
  const std::vector<std::string> serve = {"serve", "--dataset", dir + "/g", "--model", dir + "/m",
                                          "--workload", "1"};
  ASSERT_EQ(run(serve).code, 0);
  {
    std::fstream f(dir + "/g/features.npy", std::ios::in | std::ios::out | std::ios::binary);
    // A float's high byte: still finite.
    testing::flip_byte(f, testing::size_of(f) - 3, 0x01);
  }
  auto r = run(serve);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("features.npy"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("checksum"), std::string::npos) << r.out;
  auto skip = serve;
  skip.push_back("--no-verify-data");
  r = run(skip);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("data checksums not verified (--no-verify-data)"), std::string::npos)
      << r.out;
}

// A corrupt RocksDB file under the parameter server: the warm-up reads every
// row at start, so the server refuses to start, naming the database file,
// instead of serving wrong or default vectors.
TEST(chaos_byte_flip_test, a_corrupt_rocksdb_file_is_refused_at_start_by_name) {
  const std::string dir = graph::testing::temp_dir("chaos_rocksdb");
  ASSERT_EQ(run({"model", "init", "--arch", "dlrm", "--in", "13", "--hidden", "16", "--tables",
                 "2000,500", "--seed", "2", "--out-dir", dir + "/dlrm"})
                .code,
            0);
  const std::vector<std::string> serve = {"serve-dlrm", "--model",    dir + "/dlrm",
                                          "--pdb",      dir + "/pdb", "--workload",
                                          "5",          "--batch",    "16"};
  ASSERT_EQ(run(serve).code, 0);  // fills and flushes the PDB
  int corrupted = 0;
  for (const auto& e : fs::directory_iterator(dir + "/pdb")) {
    if (e.path().extension() != ".sst") continue;
    std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.write("XXXXXXXXXXXXXXXX", 16);
    ++corrupted;
  }
  ASSERT_GT(corrupted, 0);
  const auto r = run(serve);
  std::printf("corrupt RocksDB (%d table files): exit %d: %s", corrupted, r.code,
              r.out.substr(r.out.find("spindle: error")).c_str());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("Corruption"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(dir + "/pdb/"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace spindle
