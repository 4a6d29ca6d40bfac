#include "graph/dataset.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <tuple>

#include "graph/prepare.hpp"
#include "graph/sampler.hpp"
#include "graph/summary.hpp"
#include "test_util.hpp"

namespace spindle::graph {
namespace {

namespace fs = std::filesystem;

class dataset_test : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    thread_pool pool(1);
    generate_options o;
    o.rmat.scale = 7;
    o.rmat.edge_factor = 4;
    o.feature_dim = 4;
    o.metrics.fanouts = {5, 3};
    golden_ = new std::string(testing::temp_dir("golden"));
    ASSERT_TRUE(generate_dataset(o, *golden_, pool).is_ok());
  }
  static void TearDownTestSuite() { delete golden_; }

  // A private copy of the golden dataset to damage.
  std::string copy(const std::string& name) {
    std::string dir = testing::temp_dir(name);
    for (const auto& f : fs::directory_iterator(*golden_))
      fs::copy_file(f.path(), dir + "/" + f.path().filename().string(),
                    fs::copy_options::overwrite_existing);
    return dir;
  }
  static std::string read(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  static void write(const std::string& p, const std::string& bytes) {
    std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
  }
  // Overwrites element `index` (of `width` bytes) in the .npy data with `value`.
  static void poke(const std::string& path, std::size_t index, std::int64_t value,
                   std::size_t width) {
    std::string bytes = read(path);
    auto h =
        parse_npy_header(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size(), path)
            .value();
    std::memcpy(bytes.data() + h.data_offset + index * width, &value, width);
    write(path, bytes);
  }
  static std::string* golden_;
};
std::string* dataset_test::golden_ = nullptr;

TEST_F(dataset_test, round_trips_and_verifies_checksums) {
  auto d = dataset::open(*golden_, {.verify_checksums = true});
  ASSERT_TRUE(d.has_value()) << d.error().to_string();
  EXPECT_EQ(d->num_nodes(), 128);
  EXPECT_EQ(d->feature_dim(), 4);
  EXPECT_TRUE(d->has_metrics());
  EXPECT_EQ(d->metadata().fanouts, (std::vector<int>{5, 3}));
  EXPECT_EQ(static_cast<std::int64_t>(d->features().size()), 128 * 4);
  auto s = summarize(*d);
  EXPECT_EQ(s.num_edges, d->graph().num_edges());
  EXPECT_GT(s.fap_top10_share, 0.1);
}

TEST_F(dataset_test, edge_attributes_are_exposed_and_their_shape_checked) {
  const std::string dir = copy("edge_attr");
  const std::int64_t edges = dataset::open(dir).value().graph().num_edges();
  for (const std::int64_t rows : {edges, edges - 1}) {
    std::vector<float> values(std::size_t(rows * 3));
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = float(i);
    auto w = dataset_writer::update(dir).value();
    ASSERT_TRUE(w.write_edge_attr(values, 3).is_ok());
    ASSERT_TRUE(w.finish().is_ok());
    auto d = dataset::open(dir);
    if (rows == edges) {
      ASSERT_TRUE(d.has_value()) << d.error().message();
      EXPECT_EQ(d->edge_attr_cols(), 3);
      ASSERT_EQ(std::int64_t(d->edge_attr().size()), edges * 3);
      EXPECT_EQ(d->edge_attr()[5], 5.0f);
    } else {
      ASSERT_FALSE(d.has_value());
      EXPECT_NE(d.error().message().find(fmt::format("edge_attr.npy: shape [{}, 3], expected "
                                                     "[{}, 3]", rows, edges)),
                std::string::npos)
          << d.error().message();
    }
  }
  EXPECT_EQ(dataset::open(*golden_).value().edge_attr_cols(), 0);
}

TEST_F(dataset_test, out_of_range_index_is_named) {
  std::string dir = copy("oor");
  poke(dir + "/indices.npy", 3, 99999, 4);
  auto d = dataset::open(dir);
  ASSERT_FALSE(d.has_value());
  EXPECT_EQ(d.error().message(),
            dir + "/indices.npy: indices[3]=99999 out of range (num_nodes=128)");
}

TEST_F(dataset_test, non_monotone_indptr_is_named) {
  std::string dir = copy("mono");
  poke(dir + "/indptr.npy", 5, 1000000, 8);
  auto d = dataset::open(dir);
  ASSERT_FALSE(d.has_value());
  EXPECT_NE(d.error().message().find("indptr.npy: not monotone: indptr[5]=1000000"),
            std::string::npos)
      << d.error().message();
}

TEST_F(dataset_test, truncated_array_is_named) {
  std::string dir = copy("trunc");
  std::string bytes = read(dir + "/features.npy");
  write(dir + "/features.npy", bytes.substr(0, bytes.size() - 10));
  auto d = dataset::open(dir);
  ASSERT_FALSE(d.has_value());
  EXPECT_NE(d.error().message().find("features.npy: truncated"), std::string::npos)
      << d.error().message();
}

TEST_F(dataset_test, checksum_mismatch_is_found_only_when_asked) {
  std::string dir = copy("sum");
  std::string bytes = read(dir + "/fap.npy");
  bytes[bytes.size() - 8] ^= 1;  // lowest mantissa bit of the last value: still finite and >= 0
  write(dir + "/fap.npy", bytes);
  EXPECT_TRUE(dataset::open(dir).has_value());
  auto d = dataset::open(dir, {.verify_checksums = true});
  ASSERT_FALSE(d.has_value());
  EXPECT_NE(d.error().message().find("fap.npy: checksum"), std::string::npos);
}

TEST_F(dataset_test, missing_or_garbled_metadata_is_named) {
  std::string dir = copy("meta");
  fs::remove(dir + "/metadata.json");
  EXPECT_EQ(dataset::open(dir).error().code(), errc::not_found);
  write(dir + "/metadata.json", "{\"format\": \"spindle-dataset\", ");
  auto d = dataset::open(dir);
  EXPECT_NE(d.error().message().find("metadata.json"), std::string::npos);
  // A missing or wrong field of an array is named as such (not the JSON library's words).
  const std::string good = read(*golden_ + "/metadata.json");
  for (const auto& [from, to, want] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"\"xxh3_64\"", "\"xxh3_65\"", "missing field 'xxh3_64'"},
           {"\"bytes\": ", "\"bytes\": -", "bytes is not an unsigned integer"}}) {
    std::string changed = good;
    changed.replace(changed.find(from), from.size(), to);
    write(dir + "/metadata.json", changed);
    const std::string why = dataset::open(dir).error().message();
    EXPECT_NE(why.find(want), std::string::npos) << why;
    EXPECT_EQ(why.find("json.exception"), std::string::npos) << why;
  }
  write(dir + "/metadata.json", good);
  fs::remove(dir + "/psgs.npy");
  EXPECT_NE(dataset::open(dir).error().message().find("psgs.npy: cannot open"), std::string::npos);
}

TEST_F(dataset_test, recompute_metrics_in_place_updates_metadata) {
  std::string dir = copy("recompute");
  thread_pool pool(1);
  ASSERT_TRUE(
      recompute_metrics(dir, {{2}, {config::seed_distribution_kind::degree, {}}}, pool).is_ok());
  auto d = dataset::open(dir, {.verify_checksums = true});
  ASSERT_TRUE(d.has_value()) << d.error().to_string();
  EXPECT_EQ(d->metadata().fanouts, (std::vector<int>{2}));
  EXPECT_EQ(d->metadata().seed_distribution, "degree");
}

// Flips random bytes of random files: opening must succeed or fail cleanly, and
// a dataset that opens must be safe to sample and summarise.
TEST_F(dataset_test, byte_flips_give_success_or_a_clean_error) {
  std::vector<std::string> files;
  for (const auto& f : fs::directory_iterator(*golden_))
    files.push_back(f.path().filename().string());
  std::sort(files.begin(), files.end());
  std::uint64_t state = 99;
  auto next = [&] {
    return (state = state * 6364136223846793005ULL + 1442695040888963407ULL) >> 33;
  };
  int failures = 0;
  std::string dir = copy("fuzz");
  for (int iter = 0; iter < 400; ++iter) {
    const std::string& name = files[next() % files.size()];
    std::string original = read(*golden_ + "/" + name);
    std::string bytes = original;
    int flips = 1 + static_cast<int>(next() % 3);
    for (int f = 0; f < flips; ++f)
      bytes[next() % bytes.size()] ^= static_cast<char>(1 + next() % 255);
    write(dir + "/" + name, bytes);
    for (bool verify : {false, true}) {
      auto d = dataset::open(dir, {.verify_checksums = verify});
      if (!d) {
        ++failures;
        EXPECT_FALSE(d.error().message().empty());
        continue;
      }
      std::vector<std::int64_t> seeds;
      for (std::int64_t v = 0; v < d->num_nodes(); v += 7) seeds.push_back(v);
      inline_executor ex;
      EXPECT_TRUE(ex.sample(d->graph(), seeds, {{5, 3}, false, 1}).has_value());
      summarize(*d);
    }
    write(dir + "/" + name, original);
  }
  EXPECT_GT(failures, 100);  // most flips must be caught
}

}  // namespace
}  // namespace spindle::graph

namespace spindle::graph {
namespace {

// A `generate`/`prepare` killed mid-write leaves DIR.partial-PID (and, killed
// between its two renames, DIR.old-PID holding the previous dataset). The next
// write into DIR removes the partial folder of the dead process, puts a lone
// old dataset back, and leaves a live process's folders alone.
TEST(dataset_dir_test, a_dead_writers_leftovers_are_cleaned_and_nothing_is_lost) {
  namespace fs = std::filesystem;
  const std::string dir = testing::temp_dir("stale_staging");
  const std::string out = dir + "/data";
  const pid_t dead = [] {  // a pid that no process has now
    const pid_t p = ::fork();
    if (p == 0) ::_exit(0);
    ::waitpid(p, nullptr, 0);
    return p;
  }();
  fs::create_directories(fmt::format("{}.partial-{}", out, dead));
  std::ofstream(fmt::format("{}.partial-{}/half.npy", out, dead)) << "half";
  fs::create_directories(fmt::format("{}.old-{}", out, dead));  // the previous dataset
  std::ofstream(fmt::format("{}.old-{}/metadata.json", out, dead)) << "{}";
  const std::string live = fmt::format("{}.partial-{}", out, ::getppid());  // a live pid
  fs::create_directories(live);
  // The next write: `out` is missing, so the old dataset comes back first, and
  // then a non-forced write is refused rather than replacing it.
  auto st = write_dataset_dir(out, false, [](const std::string& d) {
    fs::create_directories(d);
    return status::ok();
  });
  EXPECT_FALSE(fs::exists(fmt::format("{}.partial-{}", out, dead)));
  EXPECT_FALSE(fs::exists(fmt::format("{}.old-{}", out, dead)));
  EXPECT_TRUE(fs::exists(out + "/metadata.json"));  // nothing lost
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("not empty"), std::string::npos) << st.message();
  EXPECT_TRUE(fs::exists(live));  // not ours to remove
}

}  // namespace
}  // namespace spindle::graph
