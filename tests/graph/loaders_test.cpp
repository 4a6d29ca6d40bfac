#include "graph/loaders.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include "core/npy.hpp"
#include "graph/dataset.hpp"
#include "graph/node_index.hpp"
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
  EXPECT_NE(load_edges(dir + "/w.txt", edge_format::snap).error().message().find("weight 'x'"),
            std::string::npos);
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

// A .npy as numpy writes it, with any descr and order (write_npy writes C order only).
void write_raw_npy(const std::string& path, const std::string& descr, bool fortran,
                   const std::string& shape, const void* data, std::size_t bytes) {
  std::string header = "{'descr': '" + descr +
                       "', 'fortran_order': " + (fortran ? "True" : "False") + ", 'shape': (" +
                       shape + "), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  f.write("\x93NUMPY\x01\x00", 8);
  const std::uint16_t len = std::uint16_t(header.size());
  f.write(reinterpret_cast<const char*>(&len), 2);
  f << header;
  f.write(static_cast<const char*>(data), std::streamsize(bytes));
}

// np.save(edges.T) writes Fortran order (refused before),
// [E, 2] edge lists, unsigned ids and bool features are what users export.
TEST(loaders_test, reads_fortran_order_e_by_2_and_unsigned_npy_inputs) {
  const std::string dir = temp_dir("npy_any");
  const std::vector<std::int64_t> want_src{0, 1, 2}, want_dst{1, 2, 0};
  // [2, 3] in Fortran order: column-major, so the bytes are (src, dst) pairs.
  std::vector<std::int64_t> pairs{0, 1, 1, 2, 2, 0};
  write_raw_npy(dir + "/f.npy", "<i8", true, "2, 3", pairs.data(), pairs.size() * 8);
  auto e = load_edges(dir + "/f.npy", edge_format::npy);
  ASSERT_TRUE(e.has_value()) << e.error().to_string();
  EXPECT_EQ(e->src, want_src);
  EXPECT_EQ(e->dst, want_dst);
  // [3, 2] in C order: the same bytes.
  write_raw_npy(dir + "/e2.npy", "<i8", false, "3, 2", pairs.data(), pairs.size() * 8);
  e = load_edges(dir + "/e2.npy", edge_format::npy);
  ASSERT_TRUE(e.has_value()) << e.error().to_string();
  EXPECT_EQ(e->src, want_src);
  EXPECT_EQ(e->dst, want_dst);
  // uint32 [2, 3] in C order.
  std::vector<std::uint32_t> u{0, 1, 2, 1, 2, 0};
  write_raw_npy(dir + "/u.npy", "<u4", false, "2, 3", u.data(), u.size() * 4);
  e = load_edges(dir + "/u.npy", edge_format::npy);
  ASSERT_TRUE(e.has_value()) << e.error().to_string();
  EXPECT_EQ(e->dst, want_dst);
  // uint64 past int64, and float ids, and a shape that fits neither: named errors.
  std::vector<std::uint64_t> big{0, 1, ~0ull, 1};
  write_raw_npy(dir + "/big.npy", "<u8", false, "2, 2", big.data(), big.size() * 8);
  e = load_edges(dir + "/big.npy", edge_format::npy);
  ASSERT_FALSE(e.has_value());
  EXPECT_NE(e.error().message().find("[1, 0] = 18446744073709551615 is past the int64 range"),
            std::string::npos)
      << e.error().message();
  std::vector<float> fl(6, 1.0f);
  write_raw_npy(dir + "/fl.npy", "<f4", false, "2, 3", fl.data(), fl.size() * 4);
  e = load_edges(dir + "/fl.npy", edge_format::npy);
  ASSERT_FALSE(e.has_value());
  EXPECT_NE(e.error().message().find("edge_index dtype float32"), std::string::npos);
  // bool features in Fortran order: [2, 3] column-major.
  const bool b[6] = {true, false, false, true, true, false};  // columns (1,0) (0,1) (1,0)
  write_raw_npy(dir + "/b.npy", "|b1", true, "2, 3", b, 6);
  auto f = load_features(dir + "/b.npy", feature_format::npy);
  ASSERT_TRUE(f.has_value()) << f.error().to_string();
  EXPECT_EQ(f->values, (std::vector<float>{1, 0, 1, 0, 1, 0}));
  // The dataset's own arrays stay C order only.
  EXPECT_FALSE(npy_array::open(dir + "/f.npy").has_value());
}

// a featureless graph gets PyG's usual features, and
// metadata.json says which (before: `serving needs features`).
TEST(loaders_test, featureless_graphs_get_degree_onehot_or_random_features) {
  const std::string dir = temp_dir("synthetic");
  // in-direction: 1 <- {0, 2}, 2 <- {0}. Degrees count the edges a node sends
  // (edge_index[0]), as PyG's OneHotDegree does: 0 sends 2, 1 none, 2 one.
  write_text(dir + "/e.txt", "0 1\n0 2\n2 1\n");
  thread_pool pool(1, "test");
  auto features_of = [&](const std::string& spec) {
    prepare_options o;
    o.input = dir + "/e.txt";
    o.synthetic = *parse_synthetic_features(spec);
    o.force = true;
    EXPECT_TRUE(prepare_dataset(o, dir + "/ds", pool).is_ok());
    auto ds = dataset::open(dir + "/ds");
    EXPECT_TRUE(ds.has_value());
    EXPECT_EQ(ds->metadata().build.at("features"), spec);
    auto f = ds->features();
    return std::make_pair(ds->feature_dim(), std::vector<float>(f.begin(), f.end()));
  };
  auto [dim, v] = features_of("degree");
  EXPECT_EQ(dim, 1);
  EXPECT_EQ(v, (std::vector<float>{2, 0, 1}));
  std::tie(dim, v) = features_of("onehot-degree:1");  // degree 2 clips into the last column
  EXPECT_EQ(dim, 2);
  EXPECT_EQ(v, (std::vector<float>{0, 1, 1, 0, 0, 1}));
  std::tie(dim, v) = features_of("random:4");
  EXPECT_EQ(dim, 4);
  EXPECT_NE(v[0], v[4]);
  EXPECT_FALSE(parse_synthetic_features("random:x").has_value());
  EXPECT_FALSE(parse_synthetic_features("onehot-degree:0").has_value());
  EXPECT_FALSE(parse_synthetic_features("x.npy")->has_value());  // a file, not a spec
}

// A NumPy edge_index is stored as PyG sees it: self-loops and repeated edges
// kept (a served model aggregates over them as PyG's layers do), every count
// printed with the flag that changes it; text edge lists keep dropping them.
TEST(loaders_test, an_edge_index_keeps_self_loops_and_repeats_and_says_so) {
  const std::string dir = temp_dir("keep_loops");
  // columns: 0->1 twice, 2->2 (a self-loop), 1->2
  const std::vector<std::int64_t> ei = {0, 0, 2, 1, 1, 1, 2, 2};
  ASSERT_TRUE(write_npy(dir + "/ei.npy", dtype::i64, {2, 4}, ei.data()).has_value());
  write_text(dir + "/e.txt", "0 1\n0 1\n2 2\n1 2\n");
  thread_pool pool(1, "test");
  auto stored = [&](const std::string& input, std::optional<bool> keep) {
    prepare_options o;
    o.input = dir + "/" + input;
    o.keep_self_loops = o.keep_duplicates = keep;
    o.force = true;
    ::testing::internal::CaptureStderr();
    EXPECT_TRUE(prepare_dataset(o, dir + "/ds", pool).is_ok()) << input;
    const std::string said = ::testing::internal::GetCapturedStderr();
    auto ds = dataset::open(dir + "/ds");
    EXPECT_TRUE(ds.has_value());
    return std::make_pair(ds ? ds->graph().num_edges() : -1, said);
  };
  auto [edges, said] = stored("ei.npy", std::nullopt);
  EXPECT_EQ(edges, 4);
  EXPECT_NE(said.find("kept 1 self-loops u->u (--drop-self-loops drops them)"), std::string::npos)
      << said;
  EXPECT_NE(said.find("kept 1 repeated edges (--drop-duplicates drops them)"), std::string::npos);
  std::tie(edges, said) = stored("ei.npy", false);
  EXPECT_EQ(edges, 2);
  EXPECT_NE(said.find("dropped 1 self-loops u->u (--keep-self-loops keeps them)"),
            std::string::npos) << said;
  std::tie(edges, said) = stored("e.txt", std::nullopt);
  EXPECT_EQ(edges, 2);
  EXPECT_NE(said.find("dropped 1 repeated edges (--keep-duplicates keeps them)"),
            std::string::npos) << said;
  auto ds = dataset::open(dir + "/ds");
  ASSERT_TRUE(ds.has_value());
  EXPECT_EQ(ds->metadata().build.at("duplicates_dropped"), "1");
  EXPECT_EQ(ds->metadata().build.at("self_loops_kept"), "0");
}

// NaN or Inf features answer NaN with status ok: prepare refuses them, naming
// the first, unless told to keep them (recorded in metadata.json).
TEST(loaders_test, nonfinite_features_are_refused_unless_kept) {
  const std::string dir = temp_dir("nonfinite");
  write_text(dir + "/e.txt", "0 1\n1 2\n");
  std::vector<float> x(3 * 2, 0.5f);
  x[3] = std::numeric_limits<float>::quiet_NaN();  // row 1, column 1
  ASSERT_TRUE(write_npy(dir + "/x.npy", dtype::f32, {3, 2}, x.data()).has_value());
  thread_pool pool(1, "test");
  prepare_options o;
  o.input = dir + "/e.txt";
  o.features = dir + "/x.npy";
  o.force = true;
  auto st = prepare_dataset(o, dir + "/ds", pool);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("x.npy: 1 feature values are NaN or infinite, the first at row 1 "
                              "column 1"),
            std::string::npos) << st.message();
  o.allow_nonfinite_features = true;
  ASSERT_TRUE(prepare_dataset(o, dir + "/ds", pool).is_ok());
  auto ds = dataset::open(dir + "/ds");
  ASSERT_TRUE(ds.has_value());
  EXPECT_EQ(ds->metadata().build.at("nonfinite_features_kept"), "1");
}

// requests may name nodes by the input's ids; node_index maps
// them to rows (node_names.txt for text ids, node_ids.npy for sparse integers).
TEST(loaders_test, node_index_resolves_input_ids_to_rows) {
  const std::string dir = temp_dir("ids");
  write_text(dir + "/names.txt", "alpha beta\nbeta gamma\n");
  write_text(dir + "/sparse.txt", "100157 7\n7 42\n");
  thread_pool pool(1, "test");
  for (const char* input : {"names.txt", "sparse.txt"}) {
    prepare_options o;
    o.input = dir + "/" + input;
    o.force = true;
    ASSERT_TRUE(prepare_dataset(o, dir + "/ds", pool).is_ok()) << input;
    auto ds = dataset::open(dir + "/ds");
    ASSERT_TRUE(ds.has_value());
    auto index = node_index::build(*ds);
    ASSERT_TRUE(index.has_value()) << index.error().to_string();
    EXPECT_EQ(index->size(), 3u);
    const std::string first = std::string(input) == "names.txt" ? "beta" : "100157";
    auto row = index->resolve(first);
    ASSERT_TRUE(row.has_value()) << row.error().to_string();
    EXPECT_GE(*row, 0);
    EXPECT_LT(*row, 3);
    auto missing = index->resolve("nope");
    ASSERT_FALSE(missing.has_value());
    EXPECT_NE(missing.error().message().find("id 'nope' is not a node of dataset"),
              std::string::npos)
        << missing.error().message();
  }
}

// A stored (uncompressed) zip of .npy members, as np.savez writes it.
void write_npz(const std::string& path,
               const std::vector<std::pair<std::string, std::string>>& files) {
  std::string out, central;
  auto le = [](std::string& s, std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) s += char((v >> (8 * i)) & 0xff);
  };
  for (const auto& [name, data] : files) {
    const std::uint32_t crc =
        std::uint32_t(crc32(0, reinterpret_cast<const Bytef*>(data.data()), uInt(data.size())));
    const std::size_t offset = out.size();
    le(out, 0x04034b50, 4), le(out, 20, 2), le(out, 0, 2), le(out, 0, 2), le(out, 0, 4);
    le(out, crc, 4), le(out, data.size(), 4), le(out, data.size(), 4);
    le(out, name.size(), 2), le(out, 0, 2);
    out += name + data;
    le(central, 0x02014b50, 4), le(central, 20, 2), le(central, 20, 2), le(central, 0, 2);
    le(central, 0, 2), le(central, 0, 4), le(central, crc, 4), le(central, data.size(), 4);
    le(central, data.size(), 4), le(central, name.size(), 2), le(central, 0, 2);
    le(central, 0, 2), le(central, 0, 2), le(central, 0, 2), le(central, 0, 4);
    le(central, offset, 4);
    central += name;
  }
  const std::size_t dir = out.size();
  out += central;
  le(out, 0x06054b50, 4), le(out, 0, 2), le(out, 0, 2), le(out, files.size(), 2);
  le(out, files.size(), 2), le(out, central.size(), 4), le(out, dir, 4), le(out, 0, 2);
  std::ofstream(path, std::ios::binary) << out;
}

// .npz (PyG/OGB exports) was parsed as SNAP text.
TEST(loaders_test, reads_edge_index_and_features_from_an_npz) {
  const std::string dir = temp_dir("npz");
  std::vector<std::int64_t> ei{0, 0, 2, 1, 2, 1};
  std::vector<float> x{0, 1, 2, 3, 4, 5};
  ASSERT_TRUE(write_npy(dir + "/ei.npy", dtype::i64, {2, 3}, ei.data()).has_value());
  ASSERT_TRUE(write_npy(dir + "/x.npy", dtype::f32, {3, 2}, x.data()).has_value());
  auto slurp = [](const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  write_npz(dir + "/g.npz",
            {{"edge_index.npy", slurp(dir + "/ei.npy")}, {"x.npy", slurp(dir + "/x.npy")}});
  auto e = load_edges(dir + "/g.npz", guess_edge_format(dir + "/g.npz"));
  ASSERT_TRUE(e.has_value()) << e.error().to_string();
  EXPECT_EQ(e->dst, (std::vector<std::int64_t>{1, 2, 1}));
  auto f = load_features(dir + "/g.npz", guess_feature_format(dir + "/g.npz"));
  ASSERT_TRUE(f.has_value()) << f.error().to_string();
  EXPECT_EQ(f->values, x);
  write_npz(dir + "/other.npz", {{"y.npy", slurp(dir + "/x.npy")}});
  e = load_edges(dir + "/other.npz", edge_format::npy);
  ASSERT_FALSE(e.has_value());
  EXPECT_NE(e.error().message().find("holds none of [edge_index, edges] (it holds: y)"),
            std::string::npos)
      << e.error().message();
}

void write_gz(const std::string& path, const std::string& text) {
  gzFile gz = gzopen(path.c_str(), "wb");
  gzwrite(gz, text.data(), static_cast<unsigned>(text.size()));
  gzclose(gz);
}

// OGB's on-disk layout (raw/*.csv.gz, as `ogb` downloads it)
// is read whole: edges, node count (isolated nodes kept), features and labels.
TEST(loaders_test, reads_an_ogb_dataset_folder) {
  const std::string dir = temp_dir("ogb");
  std::filesystem::create_directories(dir + "/arxiv/raw");
  write_gz(dir + "/arxiv/raw/edge.csv.gz", "0,1\n2,1\n0,2\n");
  write_gz(dir + "/arxiv/raw/num-node-list.csv.gz", "4\n");
  write_gz(dir + "/arxiv/raw/num-edge-list.csv.gz", "3\n");
  write_gz(dir + "/arxiv/raw/node-feat.csv.gz", "0.5,1\n1.5,2\n2.5,3\n3.5,4\n");
  write_gz(dir + "/arxiv/raw/node-label.csv.gz", "3\n0\nnan\n1\n");
  EXPECT_EQ(guess_edge_format(dir + "/arxiv"), edge_format::ogb);
  EXPECT_EQ(guess_edge_format(dir + "/arxiv/raw"), edge_format::ogb);
  thread_pool pool(1, "test");
  prepare_options o;
  o.input = dir + "/arxiv";
  ASSERT_TRUE(prepare_dataset(o, dir + "/ds", pool).is_ok());
  auto ds = dataset::open(dir + "/ds");
  ASSERT_TRUE(ds.has_value()) << ds.error().message();
  EXPECT_EQ(ds->num_nodes(), 4);  // node 3 has no edge but is counted
  EXPECT_EQ(ds->feature_dim(), 2);
  auto f = ds->features();
  EXPECT_EQ(std::vector<float>(f.begin(), f.end()),
            (std::vector<float>{0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4}));
  auto l = ds->labels();
  EXPECT_EQ(std::vector<std::int64_t>(l.begin(), l.end()),
            (std::vector<std::int64_t>{3, 0, -1, 1}));
  EXPECT_EQ(ds->metadata().num_classes, 4);
  auto g = ds->graph();  // in-direction: 1 aggregates over {0, 2}, 2 over {0}
  EXPECT_EQ(g.degree(0), 0);
  EXPECT_EQ(g.degree(1), 2);
  EXPECT_EQ(g.degree(2), 1);

  // What Spindle cannot serve is named.
  write_gz(dir + "/arxiv/raw/num-node-list.csv.gz", "4\n5\n");
  auto st = prepare_dataset(o, dir + "/ds2", pool);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("holds 2 graphs"), std::string::npos) << st.message();
  write_gz(dir + "/arxiv/raw/num-node-list.csv.gz", "4\n");
  write_gz(dir + "/arxiv/raw/node-label.csv.gz", "3\n0\n1\n");
  st = prepare_dataset(o, dir + "/ds2", pool);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("3 labels, but the graph has 4 nodes"), std::string::npos)
      << st.message();
  std::filesystem::create_directories(dir + "/arxiv/raw/relations");
  st = prepare_dataset(o, dir + "/ds2", pool);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("heterogeneous"), std::string::npos) << st.message();
  o.input = dir + "/nothing";
  o.format = edge_format::ogb;
  st = prepare_dataset(o, dir + "/ds2", pool);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("needs the dataset folder"), std::string::npos);
}

TEST(loaders_test, ragged_feature_csv_is_rejected) {
  std::string dir = temp_dir("feat");
  write_text(dir + "/x.csv", "1,2,3\n4,5\n");
  auto f = load_features(dir + "/x.csv", feature_format::csv);
  ASSERT_FALSE(f.has_value());
  EXPECT_EQ(f.error().message(), dir + "/x.csv:2: 2 feature columns, earlier rows have 3");
}

// Real graphs from the test data folder (SPINDLE_TEST_DATA_DIR), loaded exactly as a
// user would.
class real_graph_test : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(shared_data("README.md")))
      GTEST_SKIP() << "the test data folder (SPINDLE_TEST_DATA_DIR) is not present";
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
  struct row {
    const char* file;
    bool undirected;
    std::int64_t nodes, edges;
  };
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
