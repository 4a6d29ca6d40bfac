#include "graph/loaders.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

#include "core/npy.hpp"
#include "graph/dataset.hpp"
#include "graph/prepare.hpp"
#include "test_util.hpp"

namespace spindle::graph {
namespace {

using testing::shared_data;
using testing::temp_dir;
using testing::write_text;

TEST(loaders_test, reads_snap_text_with_comments_and_gzip) {
  std::string dir = temp_dir("snap");
  std::string text = "# Nodes: 3\n# FromNodeId\tToNodeId\n0\t1\n1\t2\n\n2 0\n";
  write_text(dir + "/g.txt", text);
  gzFile gz = gzopen((dir + "/g.txt.gz").c_str(), "wb");
  gzwrite(gz, text.data(), static_cast<unsigned>(text.size()));
  gzclose(gz);
  for (auto path : {dir + "/g.txt", dir + "/g.txt.gz"}) {
    auto e = load_edges(path, edge_format::snap);
    ASSERT_TRUE(e.has_value()) << e.error().to_string();
    EXPECT_EQ(e->src, (std::vector<std::int64_t>{0, 1, 2}));
    EXPECT_EQ(e->dst, (std::vector<std::int64_t>{1, 2, 0}));
  }
}

TEST(loaders_test, reads_csv_with_header_and_weights) {
  std::string dir = temp_dir("csv");
  write_text(dir + "/e.csv", "src,dst,weight\n0,1,0.5\n1,2,2\n");
  auto e = load_edges(dir + "/e.csv", guess_edge_format(dir + "/e.csv"));
  ASSERT_TRUE(e.has_value()) << e.error().to_string();
  EXPECT_EQ(e->weight, (std::vector<float>{0.5f, 2.0f}));
}

TEST(loaders_test, malformed_line_names_file_and_line) {
  std::string dir = temp_dir("bad");
  write_text(dir + "/e.txt", "0 1\n1 2 3 4\n");
  auto e = load_edges(dir + "/e.txt", edge_format::snap);
  ASSERT_FALSE(e.has_value());
  EXPECT_EQ(e.error().message(), dir + "/e.txt:2: expected 'src dst [weight]', got 4 fields");
  write_text(dir + "/w.txt", "0 1 x\n");
  EXPECT_NE(load_edges(dir + "/w.txt", edge_format::snap).error().message().find("weight 'x'"), std::string::npos);
}

TEST(loaders_test, string_ids_are_interned) {
  std::string dir = temp_dir("names");
  write_text(dir + "/e.txt", "1 2\nalpha 1\n");
  auto e = load_edges(dir + "/e.txt", edge_format::snap);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->names, (std::vector<std::string>{"1", "2", "alpha"}));
  EXPECT_EQ(e->src, (std::vector<std::int64_t>{0, 2}));
  EXPECT_EQ(e->dst, (std::vector<std::int64_t>{1, 0}));
}

TEST(loaders_test, reads_npy_edge_index_and_features) {
  std::string dir = temp_dir("npy");
  std::vector<std::int64_t> ei{0, 1, 2, 1, 2, 0};
  ASSERT_TRUE(write_npy(dir + "/edge_index.npy", dtype::i64, {2, 3}, ei.data()).has_value());
  auto e = load_edges(dir + "/edge_index.npy", edge_format::npy);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->dst, (std::vector<std::int64_t>{1, 2, 0}));
  std::vector<double> x{1, 2, 3, 4, 5, 6};
  ASSERT_TRUE(write_npy(dir + "/x.npy", dtype::f64, {3, 2}, x.data()).has_value());
  auto f = load_features(dir + "/x.npy", feature_format::npy);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->rows, 3);
  EXPECT_EQ(f->values[5], 6.0f);
}

TEST(loaders_test, ragged_feature_csv_is_rejected) {
  std::string dir = temp_dir("feat");
  write_text(dir + "/x.csv", "1,2,3\n4,5\n");
  auto f = load_features(dir + "/x.csv", feature_format::csv);
  ASSERT_FALSE(f.has_value());
  EXPECT_EQ(f.error().message(), dir + "/x.csv:2: 2 feature columns, earlier rows have 3");
}

// Real graphs from ../shared/data, loaded exactly as a user would.
class real_graph_test : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(shared_data("README.md"))) GTEST_SKIP() << "../shared/data not present";
  }
  // Prepares the LINQS pair <name>/<name>.{cites,content.gz} as an undirected dataset.
  expected<dataset> prepare_linqs(const std::string& name) {
    prepare_options o;
    o.input = shared_data(name + "/" + name + ".cites");
    o.features = shared_data(name + "/" + name + ".content.gz");
    o.build.undirected = true;
    std::string out = temp_dir(name);
    SPINDLE_TRY(prepare_dataset(o, out, pool_));
    return dataset::open(out, {.verify_checksums = true});
  }
  thread_pool pool_{1};
};

TEST_F(real_graph_test, cora_loads_with_features_and_labels) {
  auto d = prepare_linqs("cora");
  ASSERT_TRUE(d.has_value()) << d.error().to_string();
  EXPECT_EQ(d->num_nodes(), 2708);
  EXPECT_EQ(d->graph().num_edges(), 2 * 5278);
  EXPECT_EQ(d->feature_dim(), 1433);
  EXPECT_EQ(d->metadata().num_classes, 7);
  double ones = 0;
  for (float x : d->features()) ones += x;
  EXPECT_EQ(ones, 49216);
}

TEST_F(real_graph_test, citeseer_string_ids_and_unknown_endpoints) {
  auto d = prepare_linqs("citeseer");
  ASSERT_TRUE(d.has_value()) << d.error().to_string();
  EXPECT_EQ(d->num_nodes(), 3312);
  EXPECT_EQ(d->graph().num_edges(), 2 * 4536);
  EXPECT_EQ(d->metadata().build.at("edges_with_unknown_endpoint_dropped"), "17");
  EXPECT_TRUE(std::filesystem::exists(d->dir() + "/node_names.txt"));
}

TEST_F(real_graph_test, snap_graphs_match_their_published_counts) {
  struct row { const char* file; bool undirected; std::int64_t nodes, edges; };
  for (auto r : {row{"ego-Facebook/facebook_combined.txt.gz", true, 4039, 2 * 88234},
                 row{"wiki-Vote/Wiki-Vote.txt.gz", false, 7115, 103689},
                 row{"soc-Slashdot0902/soc-Slashdot0902.txt.gz", false, 82168, 948464 - 78303}}) {
    auto e = load_edges(shared_data(r.file), edge_format::snap);
    ASSERT_TRUE(e.has_value()) << e.error().to_string();
    build_options o;
    o.undirected = r.undirected;
    auto b = build_csr(std::move(*e), o, &pool_);
    ASSERT_TRUE(b.has_value());
    EXPECT_EQ(b->csr.num_nodes, r.nodes) << r.file;
    EXPECT_EQ(b->csr.view().num_edges(), r.edges) << r.file;
    EXPECT_TRUE(validate_csr(b->csr.view()).is_ok());
  }
}

}  // namespace
}  // namespace spindle::graph
