// Typed tables on the parameter server (runtime/type_tables.hpp): a reader's rows
// are the model's own tensor bit for bit, the model loaded with it does not hold
// the tensor, a table already loaded is reused, and a PDB table marked whole but
// lacking a row refuses the call naming the type and id (never a default row).
// The counters follow the reads; other weights' tables of a tensor are dropped
// once no model reads them (not before start-up is over, never with keep_old);
// the hash_map VDB keeps to its cap; flags that change nothing are refused; a
// load logs its progress.
#include "runtime/type_tables.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
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

// The model in a fresh folder; `rows`: the author table's rows (40 by default).
std::string model_dir(const std::string& name, std::uint64_t seed = 3, int rows = 40) {
  const auto dir = (fs::temp_directory_path() /
                    ("spindle_type_tables_" + name + "_" + std::to_string(::getpid())))
                       .string();
  fs::remove_all(dir);
  std::string text = typed_model;
  const std::string forty = "embedding_rows = 40\n";
  text.replace(text.find(forty), forty.size(), "embedding_rows = " + std::to_string(rows) + "\n");
  auto d = config::parse_model_desc(text, "type_tables_test");
  EXPECT_TRUE(d.has_value()) << d.error().message();
  EXPECT_TRUE(nn::init_model(*d, seed, dir));
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
    ASSERT_EQ(readers->readers.size(), 1u);
    std::vector<float> out(ids.size() * 2, -1.0f);
    auto st = readers->readers.at("author")(ids, out);
    ASSERT_TRUE(st) << st.message();
    for (std::size_t i = 0; i < ids.size(); ++i)
      EXPECT_EQ(std::memcmp(out.data() + i * 2, table.row(ids[i]), 2 * sizeof(float)), 0) << i;
    nn::heap_allocator alloc2;
    auto external = nn::model::load(dir, alloc2, false, {}, readers->readers);
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
  ASSERT_TRUE(readers->readers.at("author")(ids, out));
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
  auto st = readers->readers.at("author")(ids, out);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("node type 'author': id 3 has no row in the parameter server's "
                              "table " +
                              table),
            std::string::npos)
      << st.message();
  fs::remove_all(dir);
}

std::string sha_table(const std::string& dir) {
  auto desc = config::load_model_desc(dir);
  EXPECT_TRUE(desc.has_value());
  auto sha = transport::net::file_sha256(dir + "/" + desc->weights);
  EXPECT_TRUE(sha.has_value());
  return "emb.author.weight@sha256:" + *sha;
}

TEST(type_tables_test, the_counters_follow_the_reads) {
  const auto dir = model_dir("counters");
  auto a = args(dir);
  a.cache_fraction = 1;  // every row has an L1 slot: the second read hits
  auto tables = type_tables::open(a);
  ASSERT_TRUE(tables.has_value()) << tables.error().message();
  auto set = (*tables)->readers(dir);
  ASSERT_TRUE(set.has_value()) << set.error().message();
  ASSERT_TRUE(set->stats);
  auto st = set->stats();
  ASSERT_EQ(st.size(), 1u);
  EXPECT_EQ(st[0].type, "author");
  EXPECT_EQ(st[0].table, sha_table(dir));
  EXPECT_EQ(st[0].rows_loaded, 40u);  // streamed now
  EXPECT_EQ(st[0].bytes_loaded, 40u * 2 * sizeof(float));
  EXPECT_EQ(st[0].lookups, 0u);
  const std::vector<std::int64_t> ids{1, 2, 3, 3};
  std::vector<float> out(ids.size() * 2);
  for (int read = 0; read < 2; ++read) ASSERT_TRUE(set->readers.at("author")(ids, out));
  st = set->stats();
  EXPECT_EQ(st[0].lookups, 2u);
  EXPECT_EQ(st[0].l1_misses, 3u);  // the unique ids, once
  EXPECT_EQ(st[0].pdb_reads, 3u);
  EXPECT_EQ(st[0].vdb_hits, 0u);
  EXPECT_EQ(st[0].l1_hits, 3u);  // the second read
  EXPECT_EQ(st[0].bytes_read, 3u * 2 * sizeof(float));
  auto again = (*tables)->readers(dir);  // another model: what this server streamed
  ASSERT_TRUE(again.has_value()) << again.error().message();
  EXPECT_EQ(again->stats()[0].rows_loaded, 40u);
  EXPECT_EQ(again->stats()[0].lookups, 0u);  // its own reads
  *set = type_table_set{};
  *again = type_table_set{};
  tables->reset();  // a restart: the table was whole, nothing streamed
  auto restarted = type_tables::open(a);
  ASSERT_TRUE(restarted.has_value()) << restarted.error().message();
  auto later = (*restarted)->readers(dir);
  ASSERT_TRUE(later.has_value()) << later.error().message();
  EXPECT_EQ(later->stats()[0].rows_loaded, 0u);
  fs::remove_all(dir);
}

// Model `dir`'s tables read through `t`, or a failure.
type_table_set read_through(type_tables& t, const std::string& dir) {
  auto set = t.readers(dir);
  EXPECT_TRUE(set.has_value()) << set.error().message();
  return set ? std::move(*set) : type_table_set{};
}

bool holds(const type_tables& t, const std::string& table) {
  const auto all = t.pdb_tables();
  return std::find(all.begin(), all.end(), table) != all.end();
}

TEST(type_tables_test, old_weights_tables_are_dropped_once_no_model_reads_them) {
  const auto old_dir = model_dir("old", 3), new_dir = model_dir("new", 4);
  const auto old_table = sha_table(old_dir), new_table = sha_table(new_dir);
  ASSERT_NE(old_table, new_table);
  auto a = args(old_dir);
  {
    auto t = type_tables::open(a);
    ASSERT_TRUE(t.has_value()) << t.error().message();
    auto old_set = read_through(**t, old_dir);
    (*t)->started();
    auto new_set = read_through(**t, new_dir);
    EXPECT_TRUE(holds(**t, old_table));  // the old model still reads it (a roll)
    EXPECT_TRUE(holds(**t, new_table));
    old_set = {};  // the old model unloaded
    EXPECT_TRUE(holds(**t, old_table));  // given back alone drops nothing (a server stopping)
    (*t)->sweep();                       // what an unload asks for
    EXPECT_FALSE(holds(**t, old_table));
    EXPECT_TRUE(holds(**t, new_table));
    EXPECT_TRUE(old_set.readers.empty());
    auto again = read_through(**t, old_dir);  // streamed again; the new one kept (read)
    EXPECT_TRUE(holds(**t, old_table));
    EXPECT_TRUE(holds(**t, new_table));
  }
  {  // a restart serving the new weights: the old table goes once start-up is over
    auto t = type_tables::open(a);
    ASSERT_TRUE(t.has_value()) << t.error().message();
    auto new_set = read_through(**t, new_dir);
    EXPECT_TRUE(holds(**t, old_table));
    (*t)->started();
    EXPECT_FALSE(holds(**t, old_table));
    EXPECT_TRUE(holds(**t, new_table));
  }
  fs::remove_all(old_dir);
  fs::remove_all(new_dir);
}

TEST(type_tables_test, keep_old_keeps_other_weights_tables) {
  const auto old_dir = model_dir("keep_old", 3), new_dir = model_dir("keep_new", 4);
  auto a = args(old_dir);
  a.keep_old = true;
  auto t = type_tables::open(a);
  ASSERT_TRUE(t.has_value()) << t.error().message();
  read_through(**t, old_dir);  // read and given back at once
  (*t)->started();
  auto new_set = read_through(**t, new_dir);
  EXPECT_TRUE(holds(**t, sha_table(old_dir)));
  EXPECT_TRUE(holds(**t, sha_table(new_dir)));
  fs::remove_all(old_dir);
  fs::remove_all(new_dir);
}

TEST(type_tables_test, the_hash_map_vdb_keeps_to_its_cap) {
  const auto dir = model_dir("vdb_cap");
  auto a = args(dir);
  a.vdb = "hash_map";
  a.cache_fraction = 0.1;  // 4 L1 slots: most rows go to the VDB
  a.vdb_mb = 16.0 * 2 * sizeof(float) / double(1 << 20);  // 16 rows: one per partition
  auto t = type_tables::open(a);
  ASSERT_TRUE(t.has_value()) << t.error().message();
  auto set = read_through(**t, dir);
  std::vector<std::int64_t> ids(40);
  for (std::int64_t i = 0; i < 40; ++i) ids[std::size_t(i)] = i;
  std::vector<float> out(ids.size() * 2);
  ASSERT_TRUE(set.readers.at("author")(ids, out));
  EXPECT_LE((*t)->vdb_rows(sha_table(dir)), 16u);
  a.vdb_mb = 256;  // the default: the same reads leave every row there
  a.pdb = dir + "/pdb_default";
  auto roomy = type_tables::open(a);
  ASSERT_TRUE(roomy.has_value()) << roomy.error().message();
  auto roomy_set = read_through(**roomy, dir);
  ASSERT_TRUE(roomy_set.readers.at("author")(ids, out));
  EXPECT_EQ((*roomy)->vdb_rows(sha_table(dir)), 40u);
  a.vdb_mb = 0;
  auto refused = type_tables::open(a);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message().find("--type-table-vdb-mb 0"), std::string::npos);
  fs::remove_all(dir);
}

TEST(type_tables_test, flags_that_change_nothing_are_refused_by_name) {
  const auto dir = model_dir("flags");
  type_table_args a;
  a.given = {"--type-table-pdb", "--type-table-cache"};
  auto st = check_type_table_flags(a, {});
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("--type-table-pdb, --type-table-cache: this server serves no GNN"),
            std::string::npos)
      << st.message();
  a.pdb = dir + "/pdb";
  EXPECT_TRUE(check_type_table_flags(a, {dir}));
  a.pdb.clear();
  st = check_type_table_flags(a, {dir});  // a table, but no folder named
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("--type-table-pdb DIR serves typed tables: name the folder"),
            std::string::npos)
      << st.message();
  a.given = {"--type-table-vdb-mb"};
  a.pdb = dir + "/pdb";
  auto opened = type_tables::open(a);  // a cap for a VDB not asked for
  ASSERT_FALSE(opened.has_value());
  EXPECT_NE(opened.error().message().find("--type-table-vdb-mb caps the hash_map VDB"),
            std::string::npos);
  fs::remove_all(dir);
}

// The load says where it is in the log (a server under a service manager has no
// bar): 200,000 rows stream in 4 chunks of 65,536, a line at each 10% step passed.
TEST(type_tables_test, a_load_logs_its_progress) {
  const auto dir = model_dir("progress", 3, 200000);
  auto t = type_tables::open(args(dir));
  ASSERT_TRUE(t.has_value()) << t.error().message();
  ::testing::internal::CaptureStderr();
  auto set = (*t)->readers(dir);
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(set.has_value()) << set.error().message();
  const std::string load = "] load emb.author.weight into " + dir + "/pdb: ";
  for (const char* step : {"32% (65536 of 200000 rows) in ", "65% (131072 of 200000 rows) in ",
                           "98% (196608 of 200000 rows) in ", "200000 rows in "})
    EXPECT_NE(err.find(load + step), std::string::npos) << step << "\n" << err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace spindle::runtime
