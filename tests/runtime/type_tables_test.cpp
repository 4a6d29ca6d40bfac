// Typed tables on the parameter server (runtime/type_tables.hpp): a reader's rows
// are the model's own tensor bit for bit, the model loaded with it does not hold
// the tensor, a table already loaded is reused, and a PDB table marked whole but
// lacking a row refuses the call naming the type and id (never a default row).
#include "runtime/type_tables.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "config/model.hpp"
#include "core/checksum.hpp"
#include "hps/pdb/persistent_db.hpp"
#include "nn/model.hpp"
#include "transport/net/file_manifest.hpp"

namespace spindle::runtime {
namespace {

namespace fs = std::filesystem;

// paper (4 features) <- writes - author (featureless: a 40 x 2 table) and cites.
const char* typed_model =
    "[model]\narch = \"stack\"\nin = 4\nout = 3\nfanouts = [-1]\n"
    "[[node_type]]\nname = \"paper\"\nin = 4\n"
    "[[node_type]]\nname = \"author\"\nin = 2\nembedding = \"emb.author.weight\"\n"
    "embedding_rows = 40\n"
    "[[edge_type]]\nsrc = \"paper\"\nrel = \"cites\"\ndst = \"paper\"\n"
    "[[edge_type]]\nsrc = \"author\"\nrel = \"writes\"\ndst = \"paper\"\n"
    "[[output]]\nnode_type = \"paper\"\nvalue = \"head\"\n"
    "[[op]]\nkind = \"sage\"\nname = \"c1p\"\ninputs = [\"x.paper\"]\nprefix = \"c1.a\"\n"
    "out = 8\nrelation = 0\n"
    "[[op]]\nkind = \"sage\"\nname = \"c1w\"\ninputs = [\"x.author\", \"x.paper\"]\n"
    "prefix = \"c1.b\"\nout = 8\nrelation = 1\n"
    "[[op]]\nkind = \"add\"\nname = \"h\"\ninputs = [\"c1p\", \"c1w\"]\n"
    "[[op]]\nkind = \"linear\"\nname = \"head\"\ninputs = [\"h\"]\nprefix = \"lin\"\nin = 8\n"
    "out = 3\n";

std::string model_dir(const std::string& name) {
  const auto dir = (fs::temp_directory_path() /
                    ("spindle_type_tables_" + name + "_" + std::to_string(::getpid())))
                       .string();
  fs::remove_all(dir);
  auto d = config::parse_model_desc(typed_model, "type_tables_test");
  EXPECT_TRUE(d.has_value()) << d.error().message();
  EXPECT_TRUE(nn::init_model(*d, 3, dir));
  return dir;
}

type_table_args args(const std::string& dir) {
  type_table_args a;
  a.pdb = dir + "/pdb";
  a.min_mb = 0;  // every table, however small
  return a;
}

TEST(type_tables_test, rows_through_the_pdb_are_the_models_own_and_not_held) {
  const auto dir = model_dir("rows");
  nn::heap_allocator alloc;
  auto held = nn::model::load(dir, alloc);
  ASSERT_TRUE(held.has_value()) << held.error().message();
  const auto& table = held->param("emb.author.weight");
  const std::vector<std::int64_t> ids{39, 0, 7, 7, 21};
  for (int start = 0; start < 2; ++start) {  // the second start reuses the loaded rows
    auto tables = type_tables::open(args(dir));
    ASSERT_TRUE(tables.has_value()) << tables.error().message();
    auto readers = (*tables)->readers(dir);
    ASSERT_TRUE(readers.has_value()) << readers.error().message();
    ASSERT_EQ(readers->size(), 1u);
    std::vector<float> out(ids.size() * 2, -1.0f);
    auto st = readers->at("author")(ids, out);
    ASSERT_TRUE(st) << st.message();
    for (std::size_t i = 0; i < ids.size(); ++i)
      EXPECT_EQ(std::memcmp(out.data() + i * 2, table.row(ids[i]), 2 * sizeof(float)), 0) << i;
    nn::heap_allocator alloc2;
    auto external = nn::model::load(dir, alloc2, false, {}, *readers);
    ASSERT_TRUE(external.has_value()) << external.error().message();
    EXPECT_FALSE(external->has_param("emb.author.weight"));
    EXPECT_TRUE(external->type_rows_external("author"));
    EXPECT_EQ(external->parameter_count() + 40 * 2, held->parameter_count());
  }
  fs::remove_all(dir);
}

// A table is found by the weights' SHA-256: a whole table named by the weights'
// CRC-32 (which 4 changed bytes of other weights can match) is never read.
TEST(type_tables_test, a_table_under_the_weights_crc_alone_is_never_reused) {
  const auto dir = model_dir("forged");
  auto desc = config::load_model_desc(dir);
  ASSERT_TRUE(desc.has_value());
  auto crc = file_crc32_hex(dir + "/" + desc->weights);
  ASSERT_TRUE(crc.has_value());
  {  // other rows, marked whole, under the CRC-32 name
    auto pdb = hps::persistent_db::open(dir + "/pdb");
    ASSERT_TRUE(pdb.has_value()) << pdb.error().message();
    const std::string forged = "emb.author.weight@" + *crc;
    std::vector<hps::cache_key> keys(40);
    for (std::uint64_t k = 0; k < 40; ++k) keys[k] = k;
    ASSERT_TRUE((*pdb)->create_table(forged, 2));
    ASSERT_TRUE((*pdb)->insert(forged, keys, std::vector<float>(80, 7.0f)));
    ASSERT_TRUE((*pdb)->bulk_load(forged, std::vector<float>(2, 0.0f), 2, 40));
  }
  nn::heap_allocator alloc;
  auto held = nn::model::load(dir, alloc);
  ASSERT_TRUE(held.has_value()) << held.error().message();
  auto tables = type_tables::open(args(dir));
  ASSERT_TRUE(tables.has_value()) << tables.error().message();
  auto readers = (*tables)->readers(dir);
  ASSERT_TRUE(readers.has_value()) << readers.error().message();
  const std::vector<std::int64_t> ids{5};
  std::vector<float> out(2);
  ASSERT_TRUE(readers->at("author")(ids, out));
  EXPECT_EQ(std::memcmp(out.data(), held->param("emb.author.weight").row(5), 2 * sizeof(float)),
            0);
  fs::remove_all(dir);
}

TEST(type_tables_test, a_reader_for_a_type_without_a_table_is_refused_by_name) {
  const auto dir = model_dir("notype");
  nn::type_row_readers readers;
  readers["paper"] = [](std::span<const std::int64_t>, std::span<float>) { return status::ok(); };
  nn::heap_allocator alloc;
  auto m = nn::model::load(dir, alloc, false, {}, readers);
  ASSERT_FALSE(m.has_value());
  EXPECT_NE(m.error().message().find("has no node type 'paper' read from an embedding table"),
            std::string::npos)
      << m.error().message();
  fs::remove_all(dir);
}

TEST(type_tables_test, a_row_the_pdb_lacks_is_refused_by_type_and_id) {
  const auto dir = model_dir("missing");
  auto desc = config::load_model_desc(dir);
  ASSERT_TRUE(desc.has_value());
  auto sha = transport::net::file_sha256(dir + "/" + desc->weights);
  ASSERT_TRUE(sha.has_value());
  const std::string table = "emb.author.weight@sha256:" + *sha;
  {  // a table marked whole (its row 40 written) without its rows
    auto pdb = hps::persistent_db::open(dir + "/pdb");
    ASSERT_TRUE(pdb.has_value()) << pdb.error().message();
    const std::vector<float> marker(2, 0.0f);
    ASSERT_TRUE((*pdb)->bulk_load(table, marker, 2, 40));
  }
  auto tables = type_tables::open(args(dir));
  ASSERT_TRUE(tables.has_value()) << tables.error().message();
  auto readers = (*tables)->readers(dir);
  ASSERT_TRUE(readers.has_value()) << readers.error().message();
  const std::vector<std::int64_t> ids{3};
  std::vector<float> out(2);
  auto st = readers->at("author")(ids, out);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("node type 'author': id 3 has no row in the parameter server's "
                              "table " +
                              table),
            std::string::npos)
      << st.message();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace spindle::runtime
