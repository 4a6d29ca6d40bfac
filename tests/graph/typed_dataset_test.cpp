// Typed datasets: metadata.json's node_types/edge_types and edge_types.npy
// written, reopened and refused when they do not describe the graph.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "graph/compact.hpp"
#include "graph/dataset.hpp"
#include "graph/live_graph.hpp"
#include "graph/typing.hpp"
#include "test_util.hpp"
#include "typed_util.hpp"

namespace spindle::graph {
namespace {

// Node types a [0, 4) with 2 features, b [4, 7) featureless, c [7, 10) with 3;
// edge types 0 (a, writes, c), 1 (b, cites, c), 2 (c, about, a), 3 (a, knows, a).
csr_graph typed_fixture() {
  return testing::make_typed_graph(10, 4,
                                   {{0, 7, 0},
                                    {1, 7, 0},
                                    {2, 8, 0},
                                    {4, 7, 1},
                                    {5, 9, 1},
                                    {6, 9, 1},
                                    {7, 0, 2},
                                    {8, 1, 2},
                                    {9, 1, 2},
                                    {1, 0, 3},
                                    {0, 2, 3},
                                    {3, 2, 3},
                                    {2, 0, 3}});
}

dataset_metadata typed_metadata() {
  dataset_metadata m;
  m.name = "typed";
  m.edge_direction = "in";
  m.node_types = {{"a", 0, 4, 2}, {"b", 4, 3, 0}, {"c", 7, 3, 3}};
  m.edge_types = {{"a", "writes", "c", 3},
                  {"b", "cites", "c", 3},
                  {"c", "about", "a", 3},
                  {"a", "knows", "a", 4}};
  return m;
}

// Writes the fixture with `m` as its metadata (features padded to 3 columns).
std::string write_typed(const std::string& name, dataset_metadata m) {
  const std::string dir = testing::temp_dir(name);
  const csr_graph g = typed_fixture();
  auto w = dataset_writer::create(dir, std::move(m)).value();
  EXPECT_TRUE(w.write_graph(g.view()).is_ok());
  EXPECT_TRUE(w.write_features(10, 3, [](std::int64_t lo, std::int64_t hi, float* out) {
                 for (std::int64_t v = lo; v < hi; ++v) out[(v - lo) * 3] = float(v);
               }).is_ok());
  EXPECT_TRUE(w.finish().is_ok());
  return dir;
}

std::string open_error(const std::string& dir) {
  auto d = dataset::open(dir);
  return d ? std::string("opened") : d.error().message();
}

TEST(typed_dataset_test, round_trips_node_and_edge_types) {
  const auto dir = write_typed("typed_round_trip", typed_metadata());
  auto d = dataset::open(dir, {.verify_checksums = true});
  ASSERT_TRUE(d.has_value()) << d.error().message();
  ASSERT_TRUE(d->typed());
  ASSERT_EQ(d->node_types().size(), 3u);
  EXPECT_EQ(d->node_types()[2].name, "c");
  EXPECT_EQ(d->node_types()[2].offset, 7);
  EXPECT_EQ(d->node_types()[2].feature_dim, 3);
  ASSERT_EQ(d->edge_types_info().size(), 4u);
  EXPECT_EQ(d->edge_types_info()[1].rel, "cites");
  EXPECT_EQ(d->edge_types_info()[3].count, 4);
  EXPECT_EQ(d->node_type_of(0), 0);
  EXPECT_EQ(d->node_type_of(4), 1);
  EXPECT_EQ(d->node_type_of(6), 1);
  EXPECT_EQ(d->node_type_of(9), 2);
  EXPECT_EQ(d->find_node_type("c").value(), 2);
  const auto g = d->graph();
  ASSERT_TRUE(g.typed());
  EXPECT_EQ(g.num_edge_types, 4);
  const csr_graph want = typed_fixture();
  EXPECT_TRUE(std::equal(g.edge_types.begin(), g.edge_types.end(), want.edge_types.begin(),
                         want.edge_types.end()));
  EXPECT_EQ(d->metadata().arrays.at("edge_types").type, dtype::i16);
}

TEST(typed_dataset_test, find_node_type_lists_the_known_names) {
  auto d = dataset::open(write_typed("typed_find", typed_metadata())).value();
  auto t = d.find_node_type("paper");
  ASSERT_FALSE(t.has_value());
  EXPECT_NE(t.error().message().find("'paper' is not one of"), std::string::npos);
  EXPECT_NE(t.error().message().find("a, b, c"), std::string::npos);
}

TEST(typed_dataset_test, untyped_datasets_stay_untyped) {
  const std::string dir = testing::temp_dir("typed_untyped");
  const csr_graph g = testing::make_graph(3, {{0, 1}, {1, 2}});
  auto w = dataset_writer::create(dir, {}).value();
  ASSERT_TRUE(w.write_graph(g.view()).is_ok());
  ASSERT_TRUE(w.finish().is_ok());
  auto d = dataset::open(dir).value();
  EXPECT_FALSE(d.typed());
  EXPECT_FALSE(d.graph().typed());
  EXPECT_EQ(d.metadata().arrays.count("edge_types"), 0u);
  EXPECT_EQ(metadata_to_json(d.metadata()).find("node_types"), std::string::npos);
}

TEST(typed_dataset_test, refuses_offsets_that_are_not_cumulative) {
  auto m = typed_metadata();
  m.node_types[1].offset = 5;
  EXPECT_NE(open_error(write_typed("typed_offset", m)).find("node_types[1].offset = 5, expected 4"),
            std::string::npos);
}

TEST(typed_dataset_test, refuses_counts_that_miss_num_nodes) {
  auto m = typed_metadata();
  m.node_types[2].count = 2;
  EXPECT_NE(open_error(write_typed("typed_count", m)).find("node_types' counts sum to 9"),
            std::string::npos);
}

TEST(typed_dataset_test, refuses_repeated_and_empty_names) {
  auto m = typed_metadata();
  m.node_types[1].name = "a";
  EXPECT_NE(open_error(write_typed("typed_repeat", m)).find("node_types[1].name 'a' repeats"),
            std::string::npos);
  m = typed_metadata();
  m.node_types[0].name = "";
  EXPECT_NE(open_error(write_typed("typed_empty", m)).find("node_types[0].name is empty"),
            std::string::npos);
}

TEST(typed_dataset_test, refuses_edge_types_naming_unknown_node_types) {
  auto m = typed_metadata();
  m.edge_types[2].dst = "paper";
  EXPECT_NE(open_error(write_typed("typed_unknown", m))
                .find("edge_types[2].dst 'paper' is not a node type"),
            std::string::npos);
}

// Rewrites dir/metadata.json with `from` replaced by `to` (a hand edit).
void edit_metadata(const std::string& dir, const std::string& from, const std::string& to) {
  const std::string path = dir + "/metadata.json";
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto at = text.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  text.replace(at, from.size(), to);
  std::ofstream(path, std::ios::trunc) << text;
}

TEST(typed_dataset_test, refuses_a_typing_edited_by_hand_that_keeps_every_count) {
  const auto dir = write_typed("typed_edited", typed_metadata());
  ASSERT_EQ(open_error(dir), "opened");
  edit_metadata(dir, "\"writes\"", "\"reads\"");  // sums, offsets and endpoints still fit
  const auto err = open_error(dir);
  EXPECT_NE(err.find("node_types/edge_types do not match types_xxh3_64"), std::string::npos)
      << err;
  const auto bare = write_typed("typed_no_checksum", typed_metadata());
  edit_metadata(bare, "\"types_xxh3_64\"", "\"types_other\"");
  EXPECT_NE(open_error(bare).find("a typed dataset needs types_xxh3_64"), std::string::npos);
}

TEST(typed_dataset_test, refuses_a_feature_dim_other_than_the_widest_type) {
  auto m = typed_metadata();
  m.node_types[2].feature_dim = 2;
  EXPECT_NE(open_error(write_typed("typed_width", m)).find("the widest node type has 2"),
            std::string::npos);
}

TEST(typed_dataset_test, refuses_edges_whose_endpoints_do_not_fit_their_type) {
  auto m = typed_metadata();
  m.node_types = {{"a", 0, 4, 2}, {"b", 4, 3, 0}, {"c", 7, 3, 3}};
  m.edge_types[3].dst = "c";  // (a, knows, c), but its edges join a to a
  const auto err = open_error(write_typed("typed_endpoints", m));
  EXPECT_NE(err.find("edge_types.npy: edge_types["), std::string::npos) << err;
  EXPECT_NE(err.find("(a, knows, c) but the edge joins node"), std::string::npos) << err;
}

TEST(typed_dataset_test, refuses_edge_type_ids_out_of_range_or_unsorted) {
  const csr_graph good = typed_fixture();
  csr_graph bad = good;
  bad.edge_types[0] = 4;
  EXPECT_NE(validate_csr(bad.view()).message().find("edge_types[0]=4 out of range"),
            std::string::npos);
  bad = good;
  bad.edge_types.pop_back();
  EXPECT_NE(validate_csr(bad.view()).message().find("edge_types.npy: has 12 entries"),
            std::string::npos);
  bad = good;
  // Row 0 lists (c, about, a) then (a, knows, a): swap them out of order.
  std::swap(bad.edge_types[0], bad.edge_types[1]);
  EXPECT_NE(validate_csr(bad.view()).message().find("must be sorted by edge type"),
            std::string::npos);
}

TEST(typed_dataset_test, refuses_edge_types_without_node_types) {
  auto m = typed_metadata();
  m.node_types.clear();
  EXPECT_NE(
      open_error(write_typed("typed_no_nodes", m)).find("edge_types given without node_types"),
      std::string::npos);
}

// Row v as (edge type, neighbour's type, neighbour's id within it), sorted.
std::vector<std::tuple<int, int, std::int64_t>> typed_row(std::span<const node_type_info> types,
                                                          const csr_view& g, const graph_delta* d,
                                                          std::int64_t v) {
  std::vector<std::int64_t> s;
  std::vector<float> w;
  std::vector<std::int16_t> t;
  graph_delta none;
  none.base_nodes = none.num_nodes = g.num_nodes;
  const auto r = read_row(g, d ? *d : none, v, s, w, &t);
  std::vector<std::tuple<int, int, std::int64_t>> out;
  for (std::size_t i = 0; i < r.neighbours.size(); ++i)
    out.emplace_back(r.types[i], node_type_at(types, d, r.neighbours[i]),
                     local_id_at(types, d, r.neighbours[i]));
  std::sort(out.begin(), out.end());
  return out;
}

TEST(typed_dataset_test, a_compaction_numbers_each_type_into_one_range_keeping_ids_within_types) {
  auto ds = dataset::open(write_typed("typed_compact_in", typed_metadata())).value();
  live_graph_options o;
  o.feature_dim = 3;
  o.node_types.assign(ds.node_types().begin(), ds.node_types().end());
  o.edge_types.assign(ds.edge_types_info().begin(), ds.edge_types_info().end());
  live_graph lg(ds.graph(), o);
  graph_update u;
  u.nodes.push_back({"a", 1, {5, 6}, {}, {}, {1}});  // a 4 (global 10); a 1 removed
  u.nodes.push_back({"b", 2, {}, {}, {}, {}});       // b 3, b 4 (globals 11, 12)
  u.add_typed.push_back({"a,writes,c", {4, 0}, {1, 2}, {}});
  u.add_typed.push_back({"b,cites,c", {4}, {0}, {}});
  u.add_typed.push_back({"about", {2}, {4}, {}});
  ASSERT_TRUE(lg.apply(u));
  const auto d = lg.current();
  const std::string out = testing::temp_dir("typed_compact_out");
  std::filesystem::remove_all(out);
  ASSERT_TRUE(compact_dataset(ds, *d, {}, out).is_ok());
  auto c = dataset::open(out).value();
  const auto nt = c.node_types();
  ASSERT_EQ(nt.size(), 3u);
  EXPECT_EQ(std::tuple(nt[0].offset, nt[0].count, nt[1].offset, nt[1].count, nt[2].offset,
                       nt[2].count),
            std::tuple(0, 5, 5, 5, 10, 3));
  ASSERT_EQ(c.removed_nodes().size(), 1u);
  EXPECT_EQ(c.removed_nodes()[0], 1);
  EXPECT_EQ(base_version(c.metadata()), d->version);
  EXPECT_EQ(added_while_served(c.metadata(), "a"), 1);
  EXPECT_EQ(added_while_served(c.metadata(), "b"), 2);
  EXPECT_EQ(added_while_served(c.metadata(), "c"), 0);
  for (int t = 0; t < 3; ++t)
    for (std::int64_t l = 0; l < nt[std::size_t(t)].count; ++l) {
      const std::int64_t was = global_id_at(ds.node_types(), d.get(), t, l);
      const std::int64_t now = nt[std::size_t(t)].offset + l;
      SCOPED_TRACE(fmt::format("type {} id {}: global {} -> {}", t, l, was, now));
      EXPECT_EQ(c.node_type_of(now), t);
      EXPECT_EQ(typed_row(nt, c.graph(), nullptr, now),
                d->is_removed(was) ? decltype(typed_row(nt, c.graph(), nullptr, now)){}
                                   : typed_row(ds.node_types(), ds.graph(), d.get(), was));
      std::vector<float> want(3, 0.0f);
      if (const auto* row = d->features.find(was))
        want = **row;
      else if (was < ds.num_nodes())
        want.assign(ds.feature_row(was), ds.feature_row(was) + 3);
      EXPECT_EQ(std::vector<float>(c.feature_row(now), c.feature_row(now) + 3), want);
    }
}

}  // namespace
}  // namespace spindle::graph
