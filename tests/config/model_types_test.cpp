// Typed stack models: [[node_type]], [[edge_type]] and [[output]] tables, each
// value's node type checked along the ops, the block each message-passing op
// reads, and a graph's edge types bound to the model's by name.
#include "config/model.hpp"

#include <gtest/gtest.h>

namespace spindle::config {
namespace {

// paper (4 features) <- cites - paper, author (2 features) - writes -> paper:
// two SAGE hops summed over edge types, then a Linear for papers.
std::string typed(const std::string& ops_extra = "", const std::string& outputs =
                      "[[output]]\nnode_type = \"paper\"\nvalue = \"head\"\n") {
  return "[model]\narch = \"stack\"\nin = 4\nout = 3\nfanouts = [-1, -1]\n"
         "[[node_type]]\nname = \"paper\"\nin = 4\n[[node_type]]\nname = \"author\"\nin = 2\n"
         "[[edge_type]]\nsrc = \"paper\"\nrel = \"cites\"\ndst = \"paper\"\n"
         "[[edge_type]]\nsrc = \"author\"\nrel = \"writes\"\ndst = \"paper\"\n"
         "[[edge_type]]\nsrc = \"paper\"\nrel = \"rev_writes\"\ndst = \"author\"\nfanouts = [5, 3]\n" +
         outputs +
         "[[op]]\nkind = \"sage\"\nname = \"c1p\"\ninputs = [\"x.paper\"]\nprefix = \"c1.a\"\nout = 8\nrelation = 0\n"
         "[[op]]\nkind = \"sage\"\nname = \"c1w\"\ninputs = [\"x.author\", \"x.paper\"]\nprefix = \"c1.b\"\nout = 8\nrelation = 1\n"
         "[[op]]\nkind = \"sage\"\nname = \"c1a\"\ninputs = [\"x.paper\", \"x.author\"]\nprefix = \"c1.c\"\nout = 8\nrelation = 2\n"
         "[[op]]\nkind = \"add\"\nname = \"h\"\ninputs = [\"c1p\", \"c1w\"]\n"
         "[[op]]\nkind = \"relu\"\nname = \"hr\"\ninputs = [\"h\"]\n"
         "[[op]]\nkind = \"relu\"\nname = \"ar\"\ninputs = [\"c1a\"]\n"
         "[[op]]\nkind = \"sage\"\nname = \"c2w\"\ninputs = [\"ar\", \"hr\"]\nprefix = \"c2\"\nout = 8\nrelation = 1\n"
         "[[op]]\nkind = \"linear\"\nname = \"head\"\ninputs = [\"c2w\"]\nprefix = \"lin\"\nin = 8\nout = 3\n" +
         ops_extra;
}

TEST(model_types_test, a_typed_stack_knows_each_ops_block_and_round_trips) {
  auto d = parse_model_desc(typed(), "m/model.toml");
  ASSERT_TRUE(d.has_value()) << d.error().message();
  EXPECT_TRUE(d->typed());
  EXPECT_EQ(d->layers, 2);
  EXPECT_EQ(d->ops[0].layer, 0);
  EXPECT_EQ(d->ops[6].layer, 1);  // reads values one hop deep
  EXPECT_EQ(d->ops[1].in_dst, 4);
  EXPECT_TRUE(is_bipartite(d->ops[1]));
  EXPECT_FALSE(is_bipartite(d->ops[0]));
  EXPECT_EQ(d->types.edge_types[2].fanouts, (std::vector<int>{5, 3}));
  auto again = parse_model_desc(to_toml(*d), "again");
  ASSERT_TRUE(again.has_value()) << again.error().message() << "\n" << to_toml(*d);
  EXPECT_EQ(again->types.outputs[0].value, "head");
  EXPECT_EQ(again->ops[1].relation, 1);
}

TEST(model_types_test, miswired_types_are_refused_by_name) {
  auto bad = [](const std::string& text) {
    auto d = parse_model_desc(text, "m/model.toml");
    EXPECT_FALSE(d.has_value());
    return d ? std::string() : d.error().message();
  };
  // A join of a paper value and an author value.
  EXPECT_NE(bad(typed("[[op]]\nkind = \"add\"\nname = \"mix\"\ninputs = [\"hr\", \"ar\"]\n"))
                .find("joins values of node types"), std::string::npos);
  // An output holding another type's rows.
  EXPECT_NE(bad(typed("", "[[output]]\nnode_type = \"author\"\nvalue = \"head\"\n"))
                .find("holds node type 'paper'"), std::string::npos);
  // Message passing reading the wrong source type.
  EXPECT_NE(bad(typed("[[op]]\nkind = \"sage\"\nname = \"w\"\ninputs = [\"x.paper\", \"x.paper\"]\n"
                      "prefix = \"w\"\nout = 8\nrelation = 1\n"))
                .find("reads node types 'paper' (sources)"), std::string::npos);
  // An edge type naming an unknown node type, and a relation out of range.
  auto text = typed();
  auto unknown = text;
  unknown.replace(unknown.find("src = \"author\""), 14, "src = \"venue\"");
  EXPECT_NE(bad(unknown).find("'venue' has no [[node_type]]"), std::string::npos);
  EXPECT_NE(bad(typed("[[op]]\nkind = \"sage\"\nname = \"w\"\ninputs = [\"x.paper\"]\nprefix = "
                      "\"w\"\nout = 8\nrelation = 7\n"))
                .find("relation = 7"), std::string::npos);
  // GCN has no typed form; a bipartite GAT with self-loops.
  EXPECT_NE(bad(typed("[[op]]\nkind = \"gcn\"\nname = \"g\"\ninputs = [\"x.paper\"]\nprefix = "
                      "\"g\"\nout = 8\nrelation = 0\n"))
                .find("relation: not a setting of gcn"), std::string::npos);
  EXPECT_NE(bad(typed("[[op]]\nkind = \"gat\"\nname = \"g\"\ninputs = [\"x.author\", \"x.paper\"]\n"
                      "prefix = \"g\"\nout = 8\nrelation = 1\n"))
                .find("add_self_loops on a bipartite"), std::string::npos);
  // An untyped model's op naming an edge type; per-edge fanouts of the wrong length.
  EXPECT_NE(bad("[model]\narch = \"stack\"\nin = 4\nout = 3\n[[op]]\nkind = \"sage\"\nprefix = "
                "\"c\"\nout = 3\nrelation = 0\n")
                .find("no [[edge_type]] tables"), std::string::npos);
  auto fan = typed();
  fan.replace(fan.find("fanouts = [5, 3]"), 16, "fanouts = [5]");
  EXPECT_NE(bad(fan).find("edge_type[2].fanouts has 1 values"), std::string::npos);
  // 0 samples no neighbour of the edge type at that hop (as NeighborLoader's dict
  // form); below -1 is refused naming the index and value.
  auto zero = typed();
  zero.replace(zero.find("fanouts = [5, 3]"), 16, "fanouts = [5, 0]");
  auto ok = parse_model_desc(zero, "m/model.toml");
  ASSERT_TRUE(ok.has_value()) << ok.error().message();
  EXPECT_EQ(ok->types.edge_types[2].fanouts, (std::vector<int>{5, 0}));
  auto low = typed();
  low.replace(low.find("fanouts = [5, 3]"), 16, "fanouts = [5, -2]");
  EXPECT_NE(bad(low).find("edge_type[2].fanouts[1] = -2: each is 1..100000, 0"), std::string::npos)
      << bad(low);
}

TEST(model_types_test, a_graphs_edge_types_bind_by_name) {
  auto d = parse_model_desc(typed(), "m/model.toml");
  ASSERT_TRUE(d.has_value()) << d.error().message();
  const std::vector<std::array<std::string, 3>> edges{{"author", "writes", "paper"},
                                                      {"paper", "in", "venue"},
                                                      {"paper", "rev_writes", "author"},
                                                      {"paper", "cites", "paper"}};
  const std::vector<std::string> nodes{"venue", "paper", "author"};
  const std::vector<std::int64_t> widths{0, 4, 2};
  auto map = bind_edge_types(d->types, edges, nodes, widths);
  ASSERT_TRUE(map.has_value()) << map.error().message();
  EXPECT_EQ(*map, (std::vector<int>{1, -1, 2, 0}));
  const std::vector<std::int64_t> narrow{0, 3, 2};
  auto w = bind_edge_types(d->types, edges, nodes, narrow);
  ASSERT_FALSE(w.has_value());
  EXPECT_NE(w.error().message().find("reads 4 feature columns, the graph has 3"), std::string::npos);
  const std::vector<std::array<std::string, 3>> fewer{edges[0], edges[2]};
  auto missing = bind_edge_types(d->types, fewer, nodes, widths);
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message().find("(paper, cites, paper), which the graph lacks"),
            std::string::npos);
  // A graph saved without its reverse relations: the message says how to add them.
  const std::vector<std::array<std::string, 3>> one_way{edges[0], edges[1], edges[3]};
  auto reverse = bind_edge_types(d->types, one_way, nodes, widths);
  ASSERT_FALSE(reverse.has_value());
  const auto& text = reverse.error().message();
  EXPECT_NE(text.find("(paper, rev_writes, author), which the graph lacks (it has: (author, "
                      "writes, paper), (paper, in, venue), (paper, cites, paper)); the graph "
                      "holds (author, writes, paper) the other way only: PyG's T.ToUndirected()"),
            std::string::npos)
      << text;
  EXPECT_EQ(missing.error().message().find("other way"), std::string::npos);
  EXPECT_FALSE(find_output(d->types, "author").has_value());
  EXPECT_EQ(*find_output(d->types, "paper"), 0u);
}

TEST(model_types_test, a_featureless_type_reads_its_embedding_table) {
  std::string text = typed();
  const std::string author = "name = \"author\"\nin = 2\n";
  text.replace(text.find(author), author.size(),
               author + "embedding = \"emb.author.weight\"\nembedding_rows = 40\n");
  auto d = parse_model_desc(text, "m/model.toml");
  ASSERT_TRUE(d.has_value()) << d.error().message();
  EXPECT_EQ(d->types.node_types[1].embedding, "emb.author.weight");
  EXPECT_EQ(d->types.node_types[1].embedding_rows, 40);
  auto again = parse_model_desc(to_toml(*d), "again");
  ASSERT_TRUE(again.has_value()) << again.error().message();
  EXPECT_EQ(again->types.node_types[1].embedding_rows, 40);
  // The graph's author width does not matter; its author count must be the table's.
  const std::vector<std::array<std::string, 3>> edges{
      {"paper", "cites", "paper"}, {"author", "writes", "paper"}, {"paper", "rev_writes", "author"}};
  const std::vector<std::string> nodes{"paper", "author"};
  const std::vector<std::int64_t> widths{4, 0}, counts{10, 40}, fewer{10, 39};
  EXPECT_TRUE(bind_edge_types(d->types, edges, nodes, widths, counts).has_value());
  auto other = bind_edge_types(d->types, edges, nodes, widths, fewer);
  ASSERT_FALSE(other.has_value());
  EXPECT_NE(other.error().message().find("node type 'author': the model's embedding table "
                                         "emb.author.weight has 40 rows, the graph has 39"),
            std::string::npos)
      << other.error().message();
  for (const char* bad : {"embedding = \"t\"\n", "embedding_rows = 4\n",
                          "embedding = \"t\"\nembedding_rows = 0\n",
                          "embedding = \"a b\"\nembedding_rows = 4\n"}) {
    std::string wrong = typed();
    wrong.replace(wrong.find(author), author.size(), author + bad);
    auto r = parse_model_desc(wrong, "m/model.toml");
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_NE(r.error().message().find("node_type[1].embedding"), std::string::npos)
        << r.error().message();
  }
}

}  // namespace
}  // namespace spindle::config

namespace spindle::config {
namespace {

// A typed link model names the node types of a pair's ends; each must be answered.
TEST(model_types_test, a_typed_link_model_names_answered_pair_types) {
  auto with = [](const std::string& model_keys) {
    auto text = typed();
    text.replace(text.find("fanouts = [-1, -1]\n"), 0, model_keys);
    return parse_model_desc(text, "m/model.toml");
  };
  auto d = with("task = \"link\"\npair_types = [\"paper\", \"paper\"]\n");
  ASSERT_TRUE(d.has_value()) << d.error().message();
  EXPECT_EQ(d->types.pair_types, (std::vector<std::string>{"paper", "paper"}));
  auto again = parse_model_desc(to_toml(*d), "again");
  ASSERT_TRUE(again.has_value()) << again.error().message();
  EXPECT_EQ(again->types.pair_types, d->types.pair_types);
  auto refused = [&](const std::string& keys, const std::string& words) {
    auto r = with(keys);
    ASSERT_FALSE(r.has_value()) << keys;
    EXPECT_NE(r.error().message().find(words), std::string::npos) << r.error().message();
  };
  refused("task = \"link\"\npair_types = [\"paper\", \"author\"]\n",
          "node type 'author' has no [[output]]");
  refused("task = \"link\"\n", "model.pair_types = [\"src\", \"dst\"]");
  refused("pair_types = [\"paper\", \"paper\"]\n", "is for task = \"link\"");
  refused("task = \"link\"\npair_types = [\"paper\"]\n", "must be two node type names");
  auto untyped = parse_model_desc(
      "[model]\narch = \"stack\"\nin = 4\nout = 3\ntask = \"link\"\npair_types = [\"a\", \"b\"]\n"
      "[[op]]\nkind = \"linear\"\nname = \"l\"\ninputs = [\"x\"]\nprefix = \"lin\"\nin = 4\nout = 3\n",
      "u/model.toml");
  ASSERT_FALSE(untyped.has_value());
  EXPECT_NE(untyped.error().message().find("has no [[node_type]] tables"), std::string::npos)
      << untyped.error().message();
}

}  // namespace
}  // namespace spindle::config
