// Spindle's models against the real PyTorch Geometric layers and a PyTorch DLRM:
// fixtures from scripts/make_golden_fixtures.py (run by hand), compared to 1e-4.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "../graph/test_util.hpp"
#include "core/npy.hpp"
#include "graph/dataset.hpp"
#include "graph/prepare.hpp"
#include "graph/sampler.hpp"
#include "nn/f32_matmul.hpp"
#include "nn/model.hpp"

namespace spindle::nn {
namespace {

std::string fixture(const std::string& arch) {
  return SPINDLE_SOURCE_DIR "/tests/nn/golden/" + arch;
}

template <class T>
std::vector<T> load(const std::string& path) {
  auto a = npy_array::open(path);
  EXPECT_TRUE(a.has_value()) << path;
  auto s = a->as<T>();
  EXPECT_TRUE(s.has_value()) << path;
  return {s->begin(), s->end()};
}

void expect_close(const tensor& got, const std::vector<float>& want) {
  ASSERT_EQ(std::size_t(got.numel()), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    const float tol = 1e-4f * std::max(1.0f, std::abs(want[i]));
    EXPECT_NEAR(got.data()[i], want[i], tol) << "element " << i;
  }
}

class gnn_golden_test : public ::testing::TestWithParam<std::string> {};

TEST_P(gnn_golden_test, matches_pyg_on_a_sampled_subgraph) {
  const std::string dir = fixture(GetParam());
  heap_allocator alloc;
  auto m = model::load(dir, alloc);
  ASSERT_TRUE(m.has_value()) << m.error().to_string();
  graph::sampled_subgraph sub;
  sub.hop_end = load<std::int64_t>(dir + "/hop_end.npy");
  sub.indptr = load<std::int64_t>(dir + "/indptr.npy");
  sub.indices = load<std::int32_t>(dir + "/indices.npy");
  std::vector<block> blocks;
  for (int l = 0; l < sub.num_hops(); ++l) {
    auto b = sub.layer_block(l);
    blocks.push_back({b.num_dst, b.num_src, b.indptr, b.indices});
  }
  auto x = load<float>(dir + "/x.npy");
  auto degree = gcn_degrees(sub.indptr, sub.indices, sub.hop_end.back());
  auto xt = tensor::borrow(x.data(), {sub.hop_end.back(), m->desc().in});
  auto y = m->forward(alloc, blocks, degree, xt);
  ASSERT_TRUE(y.has_value()) << y.error().to_string();
  EXPECT_EQ(y->rows(), sub.hop_end[0]);
  expect_close(*y, load<float>(dir + "/expected.npy"));
  // The large executor's path: every layer's rows split over a pool.
  thread_pool pool(1, "golden");
  auto split = m->forward(alloc, blocks, degree, xt, &pool);
  ASSERT_TRUE(split.has_value()) << split.error().to_string();
  expect_close(*split, load<float>(dir + "/expected.npy"));
}

// The -b64 fixtures are one jointly sampled batch of 64 seeds (the serving
// path's shape: hub neighbours shared by many rows).
INSTANTIATE_TEST_SUITE_P(pyg, gnn_golden_test,
                         ::testing::Values("graphsage", "gcn", "gat", "gin", "graphsage-b64",
                                           "gcn-b64", "gat-b64", "gin-b64"));

// A directed graph given as PyG's edge_index (row 0 sources, row 1
// targets). `prepare` with the default edge direction must make each node
// aggregate over the sources of its incoming edges, so a 2-layer GraphSAGE over
// every node's whole neighbourhood equals PyG's SAGEConv on the same graph;
// with --edge-direction out it must not (the graph has no reciprocal pairs).
std::vector<float> full_graph_forward(const std::string& fixture_dir,
                                      graph::edge_direction direction) {
  const std::string out = graph::testing::temp_dir("golden_directed") + "/ds";
  graph::prepare_options o;
  o.input = fixture_dir + "/edge_index.npy";
  o.features = fixture_dir + "/x.npy";
  o.direction = direction;
  thread_pool pool(1, "prepare");
  auto st = graph::prepare_dataset(o, out, pool);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  auto ds = graph::dataset::open(out);
  EXPECT_TRUE(ds.has_value());
  if (!ds) return {};
  EXPECT_EQ(ds->metadata().edge_direction, std::string(graph::to_string(direction)));
  // Every node is a seed and every neighbour is taken: the whole graph, as PyG sees it.
  const auto g = ds->graph();
  const std::int64_t n = g.num_nodes;
  graph::sampled_subgraph sub;
  sub.hop_end = {n, n, n};
  sub.indptr.assign(g.indptr.begin(), g.indptr.begin() + n + 1);
  for (std::int64_t e = 0; e < g.num_edges(); ++e)
    sub.indices.push_back(std::int32_t(g.neighbour(e)));
  heap_allocator alloc;
  auto m = model::load(fixture_dir, alloc);
  EXPECT_TRUE(m.has_value());
  if (!m) return {};
  std::vector<block> blocks;
  for (int l = 0; l < sub.num_hops(); ++l) {
    auto b = sub.layer_block(l);
    blocks.push_back({b.num_dst, b.num_src, b.indptr, b.indices});
  }
  auto x = load<float>(fixture_dir + "/x.npy");
  auto degree = gcn_degrees(sub.indptr, sub.indices, n);
  auto y = m->forward(alloc, blocks, degree, tensor::borrow(x.data(), {n, m->desc().in}));
  EXPECT_TRUE(y.has_value());
  if (!y) return {};
  return {y->data(), y->data() + y->numel()};
}

TEST(gnn_golden_test, a_directed_edge_index_aggregates_like_pyg) {
  const std::string dir = fixture("graphsage-directed");
  const auto want = load<float>(dir + "/expected.npy");
  const auto got = full_graph_forward(dir, graph::edge_direction::in);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-4f * std::max(1.0f, std::abs(want[i]))) << "element " << i;
  const auto reversed = full_graph_forward(dir, graph::edge_direction::out);
  ASSERT_EQ(reversed.size(), want.size());
  double diff = 0;
  for (std::size_t i = 0; i < want.size(); ++i)
    diff = std::max(diff, double(std::abs(reversed[i] - want[i])));
  EXPECT_GT(diff, 1e-2) << "--edge-direction out must differ from PyG on a directed graph";
}

TEST(dlrm_golden_test, matches_a_pytorch_dlrm) {
  const std::string dir = fixture("dlrm");
  heap_allocator alloc;
  auto m = model::load(dir, alloc);
  ASSERT_TRUE(m.has_value()) << m.error().to_string();
  auto dense = load<float>(dir + "/dense.npy");
  const std::int64_t batch = std::int64_t(dense.size()) / m->desc().dense_in;
  std::vector<sparse_input> sparse;
  for (std::size_t t = 0; t < m->desc().table_rows.size(); ++t)
    sparse.push_back({load<std::int64_t>(dir + "/indices" + std::to_string(t) + ".npy"),
                      load<std::int64_t>(dir + "/offsets" + std::to_string(t) + ".npy")});
  auto y =
      m->forward_dlrm(alloc, tensor::borrow(dense.data(), {batch, m->desc().dense_in}), sparse);
  ASSERT_TRUE(y.has_value()) << y.error().to_string();
  expect_close(*y, load<float>(dir + "/expected.npy"));
  sparse[1].indices[0] = 1000;
  auto bad =
      m->forward_dlrm(alloc, tensor::borrow(dense.data(), {batch, m->desc().dense_in}), sparse);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("table 1: embedding_bag: index 1000"), std::string::npos)
      << bad.error().message();
}

// A batch of 130 rows (the fixture's rows over and over) scores each row as the
// row alone does: past 64 rows the MLPs' products go through the weights packed
// for oneDNN at load (nn/packed_weight), a lone row through a GEMV.
TEST(dlrm_golden_test, a_batch_past_a_packed_block_scores_each_row_as_alone) {
  const std::string dir = fixture("dlrm");
  heap_allocator alloc;
  auto m = model::load(dir, alloc);
  ASSERT_TRUE(m.has_value()) << m.error().to_string();
  const auto dense = load<float>(dir + "/dense.npy");
  const std::int64_t in = m->desc().dense_in, rows = std::int64_t(dense.size()) / in;
  const std::size_t tables = m->desc().table_rows.size();
  std::vector<std::vector<std::int64_t>> idx(tables), off(tables);
  for (std::size_t t = 0; t < tables; ++t) {
    idx[t] = load<std::int64_t>(dir + "/indices" + std::to_string(t) + ".npy");
    off[t] = load<std::int64_t>(dir + "/offsets" + std::to_string(t) + ".npy");
  }
  // Row r of the fixture appended to `sparse` (close() adds the last offset).
  auto close = [&](std::vector<sparse_input>& sparse) {
    for (auto& s : sparse) s.offsets.push_back(std::int64_t(s.indices.size()));
  };
  auto row_input = [&](std::int64_t r, std::vector<sparse_input>& sparse) {
    for (std::size_t t = 0; t < tables; ++t) {
      const auto lo = off[t][std::size_t(r)];
      const auto hi = r + 1 < std::int64_t(off[t].size()) ? off[t][std::size_t(r + 1)]
                                                          : std::int64_t(idx[t].size());
      sparse[t].indices.insert(sparse[t].indices.end(), idx[t].begin() + lo, idx[t].begin() + hi);
      sparse[t].offsets.push_back(std::int64_t(sparse[t].indices.size()) - (hi - lo));
    }
  };
  const std::int64_t batch = 130;
  std::vector<float> big_dense;
  std::vector<sparse_input> big(tables);
  for (std::int64_t b = 0; b < batch; ++b) {
    const auto r = b % rows;
    big_dense.insert(big_dense.end(), dense.begin() + r * in, dense.begin() + (r + 1) * in);
    row_input(r, big);
  }
  close(big);
  if (f32_packed_allowed()) {
    EXPECT_EQ(m->packed_weights(), m->desc().bottom.size() + m->desc().top.size());
    EXPECT_GT(m->packed_bytes(), 0u);
  }
  // Each fixture row alone (in the model's current precision) scores as its
  // copies in the batch's `scores`.
  auto expect_rows_as_alone = [&](const tensor& scores, float tolerance, const char* what) {
    for (std::int64_t r = 0; r < rows; ++r) {
      std::vector<float> one_dense(dense.begin() + r * in, dense.begin() + (r + 1) * in);
      std::vector<sparse_input> one(tables);
      row_input(r, one);
      close(one);
      auto alone = m->forward_dlrm(alloc, tensor::borrow(one_dense.data(), {1, in}), one);
      ASSERT_TRUE(alone.has_value()) << alone.error().to_string();
      for (std::int64_t b = r; b < batch; b += rows)
        EXPECT_NEAR(scores.data()[b], alone->data()[0], tolerance) << what << " row " << r << " at " << b;
    }
  };
  auto all = m->forward_dlrm(alloc, tensor::borrow(big_dense.data(), {batch, in}), big);
  ASSERT_TRUE(all.has_value()) << all.error().to_string();
  // bf16 MLPs come before the packed float32 ones, and float32 again after them.
  if (m->set_precision("bf16")) {
    // Its bfloat16 copies are packed too (the CPU multiplies bfloat16, so oneDNN
    // runs AVX-512 here), and counted beside the float32 ones.
    const std::size_t fp32_packed =
        f32_packed_allowed() ? m->desc().bottom.size() + m->desc().top.size() : 0;
    EXPECT_GT(m->packed_weights(), fp32_packed);
    auto half = m->forward_dlrm(alloc, tensor::borrow(big_dense.data(), {batch, in}), big);
    ASSERT_TRUE(half.has_value()) << half.error().to_string();
    EXPECT_NE(std::memcmp(half->data(), all->data(), std::size_t(batch) * sizeof(float)), 0);
    // In bf16 too, a row scores in a batch of 130 (two packed blocks and a padded
    // one) as alone (one padded row).
    expect_rows_as_alone(*half, 1e-5f, "bf16");
    ASSERT_TRUE(m->set_precision("fp32"));
    auto again = m->forward_dlrm(alloc, tensor::borrow(big_dense.data(), {batch, in}), big);
    ASSERT_TRUE(again.has_value()) << again.error().to_string();
    EXPECT_EQ(std::memcmp(again->data(), all->data(), std::size_t(batch) * sizeof(float)), 0);
  }
  expect_rows_as_alone(*all, 1e-6f, "fp32");
}

// Hera Table I's NCF (NeuMF), Wide & Deep plain PyTorch modules
// and DIN (scripts/make_golden_fixtures.py --only ncf,wnd / --only din): same
// weights, same inputs.
class rec_golden_test : public ::testing::TestWithParam<const char*> {};

TEST_P(rec_golden_test, matches_pytorch) {
  const std::string dir = fixture(GetParam());
  heap_allocator alloc;
  auto m = model::load(dir, alloc);
  ASSERT_TRUE(m.has_value()) << m.error().to_string();
  std::vector<sparse_input> sparse;
  for (std::size_t t = 0; t < m->desc().table_rows.size(); ++t)
    sparse.push_back({load<std::int64_t>(dir + "/indices" + std::to_string(t) + ".npy"),
                      load<std::int64_t>(dir + "/offsets" + std::to_string(t) + ".npy")});
  const std::int64_t batch = std::int64_t(sparse[0].offsets.size()) - 1;
  auto dense = load<float>(dir + "/dense.npy");
  auto y = m->forward_rec(alloc, tensor::borrow(dense.data(), {batch, m->desc().dense_in}), sparse);
  ASSERT_TRUE(y.has_value()) << y.error().to_string();
  const auto want = load<float>(dir + "/expected.npy");
  ASSERT_EQ(y->numel(), std::int64_t(want.size()));
  for (std::size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(y->data()[i], want[i], 1e-5f * std::max(1.0f, std::abs(want[i]))) << i;
  // A key past a table is named, not read.
  sparse.back().indices[0] = 1 << 20;
  auto bad =
      m->forward_rec(alloc, tensor::borrow(dense.data(), {batch, m->desc().dense_in}), sparse);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("embedding_bag: index 1048576"), std::string::npos)
      << bad.error().message();
}

INSTANTIATE_TEST_SUITE_P(table_i, rec_golden_test, ::testing::Values("ncf", "wnd", "din"));

// DIN's behaviour keys go through the attention unit, not embedding_bag: a bad one
// is still named with its table, and bad behaviour offsets are refused.
TEST(din_golden, names_a_bad_behaviour_key_and_bad_offsets) {
  const std::string dir = fixture("din");
  heap_allocator alloc;
  auto m = model::load(dir, alloc);
  ASSERT_TRUE(m.has_value()) << m.error().to_string();
  std::vector<sparse_input> sparse;
  for (int t = 0; t < 4; ++t)
    sparse.push_back({load<std::int64_t>(dir + "/indices" + std::to_string(t) + ".npy"),
                      load<std::int64_t>(dir + "/offsets" + std::to_string(t) + ".npy")});
  ASSERT_FALSE(sparse[2].indices.empty());
  const std::int64_t batch = std::int64_t(sparse[0].offsets.size()) - 1;
  const tensor dense = tensor::borrow(nullptr, {batch, 0});
  auto keys = sparse;
  keys[2].indices[0] = 40;  // the behaviour table has 40 rows
  auto bad = m->forward_rec(alloc, dense, keys);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("table 2: embedding_bag: index 40"), std::string::npos)
      << bad.error().message();
  auto offs = sparse;
  offs[2].offsets[2] = offs[2].offsets[1] - 1;  // decreasing
  bad = m->forward_rec(alloc, dense, offs);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("table 2: offsets"), std::string::npos)
      << bad.error().message();
}

}  // namespace
}  // namespace spindle::nn
