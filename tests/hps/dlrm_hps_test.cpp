// DLRM served through the parameter server (tables in RocksDB, L1 cache, hash
// map VDB) gives the PyTorch reference's outputs (the nn golden fixture), the
// same as the model with its tables in memory; bad indices are named errors.
#include "hps/dlrm_hps.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <optional>

#include "tests/support/golden_dlrm.hpp"

namespace spindle::hps {
namespace {

namespace fs = std::filesystem;
const std::string& golden = testing::golden_dlrm_dir;

// The golden DLRM served through the parameter server: its three tables loaded
// into a PDB under `dir`, an in-process VDB, each L1 holding half its rows
// (float32, or int8 with bits 8; misses fetched synchronously), and a runner.
struct through_the_ps {
  decltype(persistent_db::open("")) pdb;
  decltype(make_hash_map_vdb({})) vdb = make_hash_map_vdb({});
  std::unique_ptr<lookup_session> session;
  std::optional<dlrm_hps_runner> runner;

  through_the_ps(const fs::path& dir, const nn::model& lean, int bits)
      : pdb(persistent_db::open((dir / "db").string())) {
    std::vector<table_options> tables;
    for (std::size_t t = 0; t < 3; ++t) {
      const std::string name = "emb" + std::to_string(t);
      EXPECT_TRUE((*pdb)->bulk_load_safetensors(name, golden + "/weights.safetensors",
                                                "emb_l." + std::to_string(t) + ".weight"));
      tables.push_back(
          {name, 8, std::uint64_t(lean.desc().table_rows[t]), 0.5, 1.0, 0.0f, 2, bits});
    }
    session = std::move(*lookup_session::create(tables, vdb->get(), pdb->get()));
    auto r = dlrm_hps_runner::create(lean, *session);
    EXPECT_TRUE(r.has_value()) << r.error().to_string();
    if (r) runner.emplace(std::move(*r));
  }
};

TEST(dlrm_hps_test, answers_match_the_reference_and_the_in_memory_model) {
  const auto dir = fs::temp_directory_path() / ("spindle-dlrm-hps-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  nn::heap_allocator alloc;
  auto full = nn::model::load(golden, alloc);
  auto lean = nn::model::load(golden, alloc, /*external_embeddings=*/true);
  ASSERT_TRUE(full.has_value() && lean.has_value());
  EXPECT_LT(lean->weight_bytes(), full->weight_bytes());
  auto ps = std::make_unique<through_the_ps>(dir, *lean, 32);
  ASSERT_TRUE(ps->runner.has_value());
  auto& runner = ps->runner;

  testing::golden_dlrm_batch g;
  auto dense = nn::tensor::borrow(g.dense.data(), {6, 13});
  auto& sparse = g.sparse;
  const auto* expected = &g.expected;
  auto in_memory = full->forward_dlrm(alloc, dense, sparse);
  ASSERT_TRUE(in_memory.has_value()) << in_memory.error().to_string();
  for (int round = 0; round < 2; ++round) {  // cold (PDB), then warm (L1)
    dlrm_timing timing;
    auto out = runner->infer(alloc, dense, sparse, &timing);
    ASSERT_TRUE(out.has_value()) << out.error().to_string();
    for (int b = 0; b < 6; ++b) {
      EXPECT_NEAR(out->data()[b], (*expected)[b], 1e-5) << "row " << b;
      EXPECT_NEAR(out->data()[b], in_memory->data()[b], 1e-6) << "row " << b;
    }
    ASSERT_EQ(timing.tables.size(), 3u);
    if (round == 1) {
      EXPECT_EQ(timing.tables[0].hit_rate, 1.0);
    }
  }
  sparse[1].indices[0] = 30;  // table 1 has 30 rows
  auto bad = runner->infer(alloc, dense, sparse);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("table 1: indices[0]=30 out of range (rows 30)"),
            std::string::npos)
      << bad.error().message();
  auto no_tables = lean->forward_dlrm(alloc, dense, sparse);
  EXPECT_FALSE(no_tables.has_value());
  ps.reset();
  fs::remove_all(dir);
}

// table_precision "int8" through the parameter server: the L1 holds int8 rows
// and rows fetched from the PDB answer quantised too, so a cold and a warm call
// both answer as the model with its tables int8 in memory does.
TEST(dlrm_hps_test, int8_rows_in_the_l1_answer_as_int8_tables_in_memory) {
  const auto dir = fs::temp_directory_path() / ("spindle-dlrm-hps8-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  nn::heap_allocator alloc;
  auto int8 = nn::model::load(golden, alloc, false, "int8");
  auto lean = nn::model::load(golden, alloc, /*external_embeddings=*/true);
  ASSERT_TRUE(int8.has_value() && lean.has_value()) << (int8 ? "" : int8.error().to_string());
  auto ps = std::make_unique<through_the_ps>(dir, *lean, 8);
  ASSERT_TRUE(ps->runner.has_value());
  auto& runner = ps->runner;
  testing::golden_dlrm_batch g;
  auto dense = nn::tensor::borrow(g.dense.data(), {6, 13});
  auto want = int8->forward_dlrm(alloc, dense, g.sparse);
  ASSERT_TRUE(want.has_value()) << want.error().to_string();
  for (int round = 0; round < 2; ++round) {  // cold (PDB), then warm (L1)
    auto out = runner->infer(alloc, dense, g.sparse);
    ASSERT_TRUE(out.has_value()) << out.error().to_string();
    for (int b = 0; b < 6; ++b) {
      EXPECT_NEAR(out->data()[b], want->data()[b], 1e-6) << "round " << round << " row " << b;
      EXPECT_NEAR(out->data()[b], g.expected[b], 1e-2) << "row " << b;  // the FP32 answer
    }
  }
  ps.reset();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace spindle::hps
