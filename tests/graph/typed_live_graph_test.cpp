// Typed graphs taking updates: batches name edge and node types with local
// ids; the graph read and sampled through the delta equals the typed CSR
// rebuilt from the changed edge list; added nodes have their types and local
// ids; bad items are refused by name; the log keeps the types.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <set>
#include <tuple>

#include "graph/graph_log.hpp"
#include "graph/live_graph.hpp"
#include "graph/sampler.hpp"
#include "graph/typed_metrics.hpp"
#include "typed_util.hpp"

namespace spindle::graph {
namespace {

using testing::typed_edge;

// Users [0, 4) with 2 features, merchants [4, 7) with 1. Edge types: 0 (user,
// pays, merchant), 1 (merchant, paid_by, user), 2 (user, knows, user).
struct fixture {
  std::vector<node_type_info> nodes{{"user", 0, 4, 2}, {"merchant", 4, 3, 1}};
  std::vector<edge_type_info> edges{{"user", "pays", "merchant", 0},
                                    {"merchant", "paid_by", "user", 0},
                                    {"user", "knows", "user", 0}};
  std::vector<typed_edge> list{{0, 4, 0}, {1, 4, 0}, {2, 5, 0}, {4, 0, 1}, {4, 1, 1},
                               {5, 2, 1}, {0, 1, 2}, {1, 0, 2}, {3, 2, 2}};
  csr_graph base = testing::make_typed_graph(7, 3, list);

  live_graph_options options() const {
    live_graph_options o;
    o.direction = row_direction::in;
    o.feature_dim = 2;
    o.node_types = nodes;
    o.edge_types = edges;
    return o;
  }
};

// Row v's (type, neighbour) list as read through d.
std::vector<std::pair<int, std::int64_t>> row_at(const csr_view& base, const graph_delta& d,
                                                 std::int64_t v) {
  std::vector<std::int64_t> s;
  std::vector<float> w;
  std::vector<std::int16_t> t;
  const auto r = read_row(base, d, v, s, w, &t);
  EXPECT_EQ(r.types.size(), r.neighbours.size());
  std::vector<std::pair<int, std::int64_t>> out;
  for (std::size_t i = 0; i < r.neighbours.size(); ++i)
    out.emplace_back(r.types[i], r.neighbours[i]);
  return out;
}

std::vector<std::pair<int, std::int64_t>> row_of(const csr_graph& g, std::int64_t v) {
  std::vector<std::pair<int, std::int64_t>> out;
  for (auto e = g.indptr[std::size_t(v)]; e < g.indptr[std::size_t(v + 1)]; ++e)
    out.emplace_back(g.edge_types[std::size_t(e)], g.view().neighbour(e));
  return out;
}

graph_update mixed_batch() {
  graph_update u;
  u.nodes.push_back({"merchant", 1, {9.0f}, {}, {}, {}});         // merchant 3 = global 7
  u.nodes.push_back({"user", 2, {1, 2, 3, 4}, {0}, {5, 6}, {}});  // users 4, 5 = globals 8, 9
  u.add_typed.push_back({"user,pays,merchant", {4, 3, 0}, {3, 1, 3}, {}});
  u.add_typed.push_back({"knows", {5}, {2}, {}});  // a unique relation names its edge type
  u.remove_typed.push_back({"merchant,paid_by,user", {0}, {1}, {}});
  return u;
}

TEST(typed_live_graph_test, typed_batches_equal_the_rebuilt_graph_read_and_sampled) {
  fixture f;
  live_graph lg(f.base.view(), f.options());
  auto r = lg.apply(mixed_batch());
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->new_ids, (std::vector<std::int64_t>{3, 4, 5}));  // local: merchant 3, users 4, 5
  // The same changes on the edge list, in global ids, rebuilt from scratch.
  auto list = f.list;
  list.insert(list.end(), {{8, 7, 0}, {3, 5, 0}, {0, 7, 0}, {9, 2, 2}});
  std::erase_if(list, [](const typed_edge& e) { return e.u == 4 && e.v == 1 && e.t == 1; });
  const csr_graph rebuilt = testing::make_typed_graph(10, 3, list);
  const auto d = lg.current();
  for (std::int64_t v = 0; v < 10; ++v)
    EXPECT_EQ(row_at(lg.base(), *d, v), row_of(rebuilt, v)) << v;
  // Added nodes carry their types and local ids, both ways.
  EXPECT_EQ(node_type_at(f.nodes, d.get(), 7), 1);
  EXPECT_EQ(local_id_at(f.nodes, d.get(), 9), 5);
  EXPECT_EQ(global_id_at(f.nodes, d.get(), 0, 4), 8);
  EXPECT_EQ(global_id_at(f.nodes, d.get(), 0, 6), -1);
  EXPECT_EQ(type_count_at(f.nodes, d.get(), 1), 4);
  // Rows of a type's width are padded to the dataset's.
  EXPECT_EQ(**d->features.find(7), (std::vector<float>{9.0f, 0.0f}));
  EXPECT_EQ(**d->features.find(0), (std::vector<float>{5.0f, 6.0f}));
  // The sampler reads through the delta as it reads the rebuilt CSR.
  csr_view through = lg.base();
  through.delta = d.get();
  const std::vector<std::int64_t> seeds{7, 5, 2, 8};
  const sample_options o{{-1, -1}, false, 0};
  auto a = inline_executor().sample(through, seeds, o);
  auto b = inline_executor().sample(rebuilt.view(), seeds, o);
  ASSERT_TRUE(a && b) << (a ? b.error() : a.error()).to_string();
  EXPECT_EQ(a->nodes, b->nodes);
  EXPECT_EQ(a->indices, b->indices);
  EXPECT_EQ(a->edge_types, b->edge_types);
  // Per-edge-type fanouts (0 skips a type) read the delta's segments alike.
  const sample_options per_type{{-1, -1}, false, 0, {{-1, 0, -1}, {0, -1, -1}}};
  auto pa = inline_executor().sample(through, seeds, per_type);
  auto pb = inline_executor().sample(rebuilt.view(), seeds, per_type);
  ASSERT_TRUE(pa && pb);
  EXPECT_EQ(pa->nodes, pb->nodes);
  EXPECT_EQ(pa->edge_types, pb->edge_types);
  thread_pool pool(2, "typed-live-test");
  auto c = pooled_executor(pool, 1).sample(through, seeds, o);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->edge_types, b->edge_types);
}

TEST(typed_live_graph_test, changed_and_added_rows_get_the_typed_psgs_of_the_changed_graph) {
  fixture f;
  auto o = f.options();
  o.psgs_fanouts = {1, 2};  // one of each edge type, then two of each
  live_graph lg(f.base.view(), o);
  ASSERT_TRUE(lg.apply(mixed_batch()));
  auto list = f.list;
  list.insert(list.end(), {{8, 7, 0}, {3, 5, 0}, {0, 7, 0}, {9, 2, 2}});
  std::erase_if(list, [](const typed_edge& e) { return e.u == 4 && e.v == 1 && e.t == 1; });
  const csr_graph rebuilt = testing::make_typed_graph(10, 3, list);
  thread_pool pool(1);
  const std::vector<double> p0(10, 0.1);
  const auto want =
      compute_typed_metrics(rebuilt.view(), per_edge_type({1, 2}, 3), p0, pool).value().psgs;
  const auto d = lg.current();
  for (std::int64_t v : {1, 2, 5, 7, 8, 9}) {  // rows changed, and the added nodes
    const double* got = d->psgs.find(v);
    ASSERT_NE(got, nullptr) << "node " << v;
    EXPECT_DOUBLE_EQ(*got, want[std::size_t(v)]) << "node " << v;
  }
  EXPECT_EQ(d->psgs_stale, 0u);
  // Row 2 holds two edge types: the untyped rule (one of the whole row) differs.
  auto untyped = rebuilt;
  untyped.edge_types.clear();
  untyped.num_edge_types = 0;
  const auto whole = compute_metrics(untyped.view(), {1, 2}, p0, pool).value().psgs;
  EXPECT_NE(*d->psgs.find(2), whole[2]);
}

TEST(typed_live_graph_test, removed_nodes_leave_every_typed_row) {
  fixture f;
  live_graph lg(f.base.view(), f.options());
  graph_update u;
  u.nodes.push_back({"user", 0, {}, {}, {}, {1}});  // user 1 goes
  ASSERT_TRUE(lg.apply(u));
  auto list = f.list;
  std::erase_if(list, [](const typed_edge& e) { return e.u == 1 || e.v == 1; });
  const csr_graph rebuilt = testing::make_typed_graph(7, 3, list);
  const auto d = lg.current();
  for (std::int64_t v : {0, 2, 3, 4, 5, 6}) EXPECT_EQ(row_at(lg.base(), *d, v), row_of(rebuilt, v));
  csr_view through = lg.base();
  through.delta = d.get();
  const sample_options o{{-1, -1}, false, 0};
  auto a = inline_executor().sample(through, std::vector<std::int64_t>{4, 0}, o);
  auto b = inline_executor().sample(rebuilt.view(), std::vector<std::int64_t>{4, 0}, o);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->nodes, b->nodes);
  EXPECT_EQ(a->edge_types, b->edge_types);
  graph_update again;
  again.add_typed.push_back({"knows", {1}, {0}, {}});
  EXPECT_EQ(lg.apply(again).error().message(), "add_edges['knows'].src[0]: user 1 is removed");
}

TEST(typed_live_graph_test, a_featureless_type_adds_nodes_by_count_with_zero_rows) {
  fixture f;
  f.nodes[1].feature_dim = 0;  // merchants without features
  live_graph lg(f.base.view(), f.options());
  graph_update u;
  u.nodes.push_back({"merchant", 2, {}, {}, {}, {}});
  auto r = lg.apply(u);
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->new_ids, (std::vector<std::int64_t>{3, 4}));
  EXPECT_EQ(**lg.current()->features.find(8), (std::vector<float>{0.0f, 0.0f}));
  u.nodes[0].add_rows = {1.0f, 2.0f};
  EXPECT_FALSE(lg.apply(u));  // rows for a type of width 0
}

std::string refusal(live_graph& lg, const graph_update& u) {
  auto r = lg.apply(u);
  return r ? "applied" : r.error().message();
}

TEST(typed_live_graph_test, refuses_bad_typed_items_by_name_and_keeps_serving) {
  fixture f;
  live_graph lg(f.base.view(), f.options());
  graph_update u;
  u.add_typed.push_back({"user,buys,merchant", {0}, {0}, {}});
  EXPECT_NE(refusal(lg, u).find("add_edges['user,buys,merchant']: edge type 'user,buys,merchant' "
                                "is not one of the graph's"),
            std::string::npos);
  u.add_typed = {{"pays", {0}, {3}, {}}};  // merchants 0..2
  EXPECT_EQ(refusal(lg, u),
            "add_edges['pays'].dst[0]: merchant 3 out of range (node type 'merchant' has 3 nodes)");
  u = {};
  u.nodes.push_back({"user", 1, {1.0f}, {}, {}, {}});
  EXPECT_EQ(refusal(lg, u), "add_nodes['user']: 1 values for 1 rows of width 2");
  u.nodes = {{"shop", 1, {1.0f}, {}, {}, {}}};
  EXPECT_NE(refusal(lg, u).find("add_nodes['shop']: node type 'shop' is not one of"),
            std::string::npos);
  u = {};
  u.add_src = {0};
  u.add_dst = {4};
  EXPECT_NE(refusal(lg, u).find("add_edges: the graph is typed: name each change's edge or node "
                                "type"),
            std::string::npos);
  u = {};
  u.remove_typed.push_back({"knows", {2}, {3}, {}});
  EXPECT_EQ(refusal(lg, u), "remove_edges['knows'][0]: no edge 2 -> 3 of this type in the graph");
  EXPECT_EQ(lg.version(), 0u);  // nothing applied; the next good batch is version 1
  u.remove_typed = {{"knows", {3}, {2}, {}}};
  EXPECT_EQ(refusal(lg, u), "applied");
  EXPECT_EQ(lg.version(), 1u);
  // Types on an untyped graph.
  csr_graph plain = testing::make_typed_graph(3, 1, {{0, 1, 0}});
  plain.edge_types.clear();
  plain.num_edge_types = 0;
  live_graph untyped(plain.view(), {row_direction::in, 0, {}});
  graph_update t;
  t.add_typed.push_back({"a,b,c", {0}, {1}, {}});
  EXPECT_EQ(refusal(untyped, t),
            "add_edges['a,b,c']: the graph is untyped: give its changes "
            "without node or edge types");
}

// What a review found accepted: a bare count past what a batch may add (memory
// for every replay of the log), weights outside the typed edges, features set on
// a type that has none, a node listed twice for removal. Each is refused by
// name and nothing is applied.
TEST(typed_live_graph_test, counts_stray_weights_featureless_rows_and_repeats_are_refused) {
  fixture f;
  f.nodes[1].feature_dim = 0;  // merchants without features
  live_graph lg(f.base.view(), f.options());
  graph_update u;
  u.nodes.push_back({"merchant", std::int64_t{1} << 21, {}, {}, {}, {}});
  EXPECT_NE(refusal(lg, u).find("add_nodes['merchant']: 2097152 nodes (0 to 1048576 a batch"),
            std::string::npos)
      << refusal(lg, u);
  u = {};
  u.add_typed.push_back({"knows", {0}, {1}, {}});
  u.add_weight = {5.0f};
  EXPECT_NE(refusal(lg, u).find("add_weights: a typed batch gives no weights"), std::string::npos);
  u = {};
  u.nodes.push_back({"merchant", 0, {}, {1}, {}, {}});
  EXPECT_NE(refusal(lg, u).find("set_features['merchant']: node type 'merchant' has no features"),
            std::string::npos)
      << refusal(lg, u);
  u = {};
  u.nodes.push_back({"user", 0, {}, {}, {}, {1, 1}});
  EXPECT_EQ(refusal(lg, u), "remove_nodes['user'][1]: user 1 is listed twice");
  EXPECT_EQ(lg.version(), 0u);
}

// Weights of added edges are a dataset's: finite and >= 0 (a negative one was
// taken, and the compaction that wrote it back was then refused by the dataset).
TEST(typed_live_graph_test, negative_and_non_finite_weights_are_refused_by_edge_type) {
  fixture f;
  auto weighted = f.base;
  weighted.edge_weight.assign(weighted.edge_types.size(), 1.0f);
  live_graph lg(weighted.view(), f.options());
  graph_update u;
  u.add_typed.push_back({"knows", {0}, {3}, {-1.0f}});
  EXPECT_EQ(refusal(lg, u), "add_edges['knows'].weight[0]: -1 must be finite and >= 0");
  u.add_typed[0].weight = {std::numeric_limits<float>::quiet_NaN()};
  EXPECT_EQ(refusal(lg, u), "add_edges['knows'].weight[0]: nan must be finite and >= 0");
  u.add_typed[0].weight = {0.0f};
  EXPECT_TRUE(lg.apply(u));
  // The untyped form alike.
  auto plain = weighted;
  plain.edge_types.clear();
  plain.num_edge_types = 0;
  live_graph untyped(plain.view(), {row_direction::in, 0, {}});
  graph_update v;
  v.add_src = {0};
  v.add_dst = {1};
  v.add_weight = {-0.5f};
  EXPECT_EQ(refusal(untyped, v), "add_edges[0]: weight -0.5 must be finite and >= 0");
}

TEST(typed_live_graph_test, the_log_keeps_a_typed_batch_and_replay_gives_the_same_graph) {
  fixture f;
  const graph_update u = mixed_batch();
  auto back = decode_update(encode_update(u));
  ASSERT_TRUE(back) << back.error().to_string();
  ASSERT_EQ(back->nodes.size(), 2u);
  EXPECT_EQ(back->nodes[1].set_rows, (std::vector<float>{5, 6}));
  EXPECT_EQ(back->add_typed[1].type, "knows");
  EXPECT_EQ(back->remove_typed[0].dst, (std::vector<std::int64_t>{1}));
  live_graph a(f.base.view(), f.options()), b(f.base.view(), f.options());
  ASSERT_TRUE(a.apply(u));
  ASSERT_TRUE(b.replay(*back, 1));
  for (std::int64_t v = 0; v < 10; ++v)
    EXPECT_EQ(row_at(a.base(), *a.current(), v), row_at(b.base(), *b.current(), v));
  EXPECT_EQ(local_id_at(f.nodes, b.current().get(), 8), 4);
}

}  // namespace
}  // namespace spindle::graph
