// The batched serving core: one jointly sampled graph, one gather of unique rows
// and one forward pass per batch; reproducible requests keep their own graph;
// both executors give the same answers; the arena stops allocating once warm.
#include "serving/gnn_pipeline.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <set>

#include "../actors/small_gnn.hpp"
#include "colocation/task_bytes.hpp"
#include "serving/device_rows_note.hpp"
#include "tests/serving/host_backed_executor.hpp"

namespace spindle::serving {
namespace {

struct fixture : actors::test_support::small_gnn {
  psgs_router router{psgs_calibration{}, routing_policy::fixed};
  fixture() : small_gnn("pipeline_ds", 12, 16, 32, 5) {}
};

std::vector<gnn_request> shared_requests(std::size_t n) {
  std::vector<gnn_request> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i].seeds = {std::int64_t(i * 7 % 300)};
  return out;
}

TEST(gnn_pipeline_test, a_batch_is_one_sampled_graph_one_gather_and_one_forward_pass) {
  fixture f;
  gnn_pipeline p(*f.ds, *f.model, f.router, f.pool);
  auto batch = shared_requests(64);
  auto res = p.run(batch, psgs_router::choice::small);
  EXPECT_EQ(res.work.graphs, 1u);
  // The joint sample of the batch's seeds, as the pipeline drew it (its first batch).
  std::vector<std::int64_t> seeds;
  for (const auto& r : batch) seeds.push_back(r.seeds[0]);
  graph::inline_executor ex;
  auto sub = ex.sample(f.ds->graph(), seeds, {{25, 10}, false, shared_graph_seed(0)});
  ASSERT_TRUE(sub.has_value());
  EXPECT_EQ(res.work.rows, sub->nodes.size());  // each unique row gathered once
  EXPECT_EQ(std::set<std::int64_t>(seeds.begin(), seeds.end()).size(), res.work.output_rows);
  // Every answer is its seed's row of one forward pass over that graph.
  std::vector<nn::block> blocks;
  for (int l = 0; l < sub->num_hops(); ++l) {
    auto b = sub->layer_block(l);
    blocks.push_back({b.num_dst, b.num_src, b.indptr, b.indices});
  }
  std::vector<float> x;
  for (auto v : sub->nodes)
    x.insert(x.end(), f.ds->features().begin() + v * 16, f.ds->features().begin() + (v + 1) * 16);
  nn::heap_allocator a;
  auto y = f.model->forward(a, blocks, {},
                            nn::tensor::borrow(x.data(), {std::int64_t(sub->nodes.size()), 16}));
  ASSERT_TRUE(y.has_value());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    ASSERT_TRUE(res.errors[i].is_ok()) << res.errors[i].to_string();
    const float* want = y->row(sub->seed_local[i]);
    for (int c = 0; c < 5; ++c) EXPECT_FLOAT_EQ(res.outputs[i][c], want[c]) << i;
  }
}

// `mine` alone, then as request 13 of a batch of 41; the graphs the batch took.
std::uint64_t expect_same_alone_and_in_a_batch(gnn_pipeline& p, const gnn_request& mine) {
  auto alone = p.run({mine}, psgs_router::choice::small);
  auto batch = shared_requests(40);
  batch.insert(batch.begin() + 13, mine);
  auto ridden = p.run(batch, psgs_router::choice::large);
  EXPECT_TRUE(alone.errors[0].is_ok());
  EXPECT_EQ(ridden.outputs[13], alone.outputs[0]);  // bit for bit
  return ridden.work.graphs;
}

TEST(gnn_pipeline_test, a_request_with_a_sampler_seed_answers_the_same_in_any_batch) {
  fixture f;
  gnn_pipeline p(*f.ds, *f.model, f.router, f.pool);
  EXPECT_EQ(expect_same_alone_and_in_a_batch(p, {{5, 17}, 42}), 2u);  // shared + its own
}

// sampling = "per_request": a call without a sampler seed is sampled on its own,
// seeded by its seeds, so it answers the same alone or inside any batch; under
// "shared" it rides its batch's graph (and, with small fanouts, answers differ).
TEST(gnn_pipeline_test, per_request_sampling_answers_a_call_the_same_in_any_batch) {
  fixture f;
  ASSERT_TRUE(f.model->set_fanouts({3, 2}).is_ok());
  ASSERT_TRUE(f.model->set_sampling("per_request").is_ok());
  EXPECT_FALSE(f.model->set_sampling("batch").is_ok());
  gnn_pipeline p(*f.ds, *f.model, f.router, f.pool);
  const gnn_request mine{{5, 17}, 0};
  EXPECT_EQ(expect_same_alone_and_in_a_batch(p, mine), 41u);  // one graph per call
  auto batch = shared_requests(40);
  batch.insert(batch.begin() + 13, mine);
  EXPECT_EQ(per_request_seed(mine.seeds), per_request_seed(std::vector<std::int64_t>{5, 17}));
  EXPECT_NE(per_request_seed(mine.seeds), per_request_seed(std::vector<std::int64_t>{17, 5}));
  ASSERT_TRUE(f.model->set_sampling("shared").is_ok());
  gnn_pipeline q(*f.ds, *f.model, f.router, f.pool);
  auto shared_alone = q.run({mine}, psgs_router::choice::small);
  bool differs = false;
  for (int b = 0; b < 5 && !differs; ++b) {
    auto again = q.run(batch, psgs_router::choice::small);
    differs = again.outputs[13] != shared_alone.outputs[0];
  }
  EXPECT_TRUE(differs) << "a shared batch graph never changed the answer: the test shows nothing";
}

TEST(gnn_pipeline_test, both_executors_answer_a_batch_of_64_alike) {
  fixture f;
  gnn_pipeline small(*f.ds, *f.model, f.router, f.pool), large(*f.ds, *f.model, f.router, f.pool);
  auto batch = shared_requests(64);
  auto a = small.run(batch, psgs_router::choice::small);
  auto b = large.run(batch, psgs_router::choice::large);  // same first-batch seed
  EXPECT_EQ(b.executor, psgs_router::choice::large);
  EXPECT_EQ(a.work.rows, b.work.rows);
  for (std::size_t i = 0; i < batch.size(); ++i)
    for (std::size_t c = 0; c < a.outputs[i].size(); ++c)
      EXPECT_NEAR(a.outputs[i][c], b.outputs[i][c],
                  1e-5f * std::max(1.0f, std::abs(a.outputs[i][c])));
}

// On a host without a GPU a batch routed to the pool runs inline once every
// slot of the pool has a batch, itself included (host_executor_while_busy), and
// takes the pool again once the others are done; the fixed policy keeps its choice.
TEST(gnn_pipeline_test, a_host_batch_runs_inline_once_every_slot_has_a_batch) {
  fixture f;
  ASSERT_EQ(f.pool.slots(), 2u);
  psgs_router strict{psgs_calibration{}, routing_policy::strict};
  gnn_pipeline p(*f.ds, *f.model, strict, f.pool);
  const auto batch = shared_requests(8);
  EXPECT_EQ(p.run(batch, psgs_router::choice::large).executor, psgs_router::choice::large);
  {
    const auto other = f.pool.occupy();  // another pipeline's batch
    EXPECT_EQ(p.run(batch, psgs_router::choice::large).executor, psgs_router::choice::small);
    strict.set_policy(routing_policy::fixed);
    EXPECT_EQ(p.run(batch, psgs_router::choice::large).executor, psgs_router::choice::large);
    strict.set_policy(routing_policy::strict);
  }
  EXPECT_EQ(f.pool.occupied(), 0u);
  EXPECT_EQ(p.run(batch, psgs_router::choice::large).executor, psgs_router::choice::large);
}

TEST(gnn_pipeline_test, a_bad_seed_fails_its_request_and_the_rest_are_answered) {
  fixture f;
  gnn_pipeline p(*f.ds, *f.model, f.router, f.pool);
  auto batch = shared_requests(8);
  batch[3].seeds = {1, 999999};
  batch[5].seeds.clear();
  auto res = p.run(batch, psgs_router::choice::small);
  EXPECT_NE(res.errors[3].to_string().find("999999"), std::string::npos);
  EXPECT_FALSE(res.errors[5].is_ok());
  for (std::size_t i : {0, 1, 2, 4, 6, 7}) {
    EXPECT_TRUE(res.errors[i].is_ok()) << i;
    EXPECT_EQ(res.outputs[i].size(), 5u);
  }
}

// A link model's pairs: each answer is its pairs' dot products over the rows the
// same graph gives its seeds; pairs that do not pair, or sent to a node model,
// fail their request alone.
TEST(gnn_pipeline_test, pairs_score_their_rows_and_misfits_fail_alone) {
  fixture f;
  config::model_desc d = f.model->desc();
  d.task = "link";
  const auto dir = f.model_dir + "-link";
  ASSERT_TRUE(nn::init_model(d, 2, dir).is_ok());
  nn::heap_allocator weights;
  auto link = nn::model::load(dir, weights);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(link.has_value()) << link.error().message();
  gnn_pipeline p(*f.ds, *link, f.router, f.pool);
  const std::vector<std::int64_t> seeds = {5, 17, 17, 17, 3, 5};
  auto res = p.run({{seeds, 42, true}, {seeds, 42, false}, {{1, 2, 3}, 0, true}},
                   psgs_router::choice::small);
  ASSERT_TRUE(res.errors[0].is_ok()) << res.errors[0].to_string();
  ASSERT_TRUE(res.errors[1].is_ok()) << res.errors[1].to_string();
  ASSERT_EQ(res.outputs[0].size(), 3u);
  const auto& rows = res.outputs[1];  // 6 x 5, the same graph (same sampler seed)
  for (std::size_t k = 0; k < 3; ++k) {
    float want = 0;
    for (std::size_t c = 0; c < 5; ++c) want += rows[2 * k * 5 + c] * rows[(2 * k + 1) * 5 + c];
    EXPECT_NEAR(res.outputs[0][k], want, 1e-5f * std::max(1.0f, std::abs(want))) << k;
  }
  EXPECT_NE(res.errors[2].to_string().find("3 node ids do not make pairs"), std::string::npos)
      << res.errors[2].to_string();
  gnn_pipeline node(*f.ds, *f.model, f.router, f.pool);
  auto refused = node.run({{seeds, 0, true}, {seeds, 0, false}}, psgs_router::choice::small);
  EXPECT_NE(refused.errors[0].to_string().find("classifies nodes"), std::string::npos);
  EXPECT_TRUE(refused.errors[1].is_ok());
}

// Named outputs: a stack model's values at the seeds, in the order asked, beside
// requests of the same graph that get the model's output; unknown names and
// models without named values fail their request alone.
TEST(gnn_pipeline_test, named_outputs_are_the_values_at_the_seeds) {
  fixture f;
  auto d = testing::small_stack_desc();
  ASSERT_TRUE(d.has_value()) << d.error().message();
  const auto dir = f.model_dir + "-stack";
  ASSERT_TRUE(nn::init_model(*d, 3, dir).is_ok());
  nn::heap_allocator weights;
  auto stack = nn::model::load(dir, weights);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(stack.has_value()) << stack.error().message();
  gnn_pipeline p(*f.ds, *stack, f.router, f.pool);
  const std::vector<std::int64_t> seeds = {5, 17, 5};
  gnn_request named{seeds, 42}, plain{seeds, 42}, unknown{seeds, 42};
  named.outputs = {"act", "output", "conv1"};
  unknown.outputs = {"conv9"};
  auto res = p.run({named, plain, unknown}, psgs_router::choice::large);
  ASSERT_TRUE(res.errors[0].is_ok()) << res.errors[0].to_string();
  ASSERT_EQ(res.outputs[0].size(), 3u * (32 + 5 + 32));
  const float* act = res.outputs[0].data();
  const float* out = act + 3 * 32;
  const float* conv1 = out + 3 * 5;
  for (std::size_t i = 0; i < 3 * 5; ++i) EXPECT_FLOAT_EQ(out[i], res.outputs[1][i]);
  for (std::size_t i = 0; i < 3 * 32; ++i) EXPECT_FLOAT_EQ(act[i], std::max(0.0f, conv1[i]));
  EXPECT_NE(res.errors[2].to_string().find("unknown output 'conv9' (the model's values: conv1, "
                                           "act, conv2, output (the model's output))"),
            std::string::npos)
      << res.errors[2].to_string();
  gnn_pipeline fixed(*f.ds, *f.model, f.router, f.pool);
  auto refused = fixed.run({named}, psgs_router::choice::small);
  EXPECT_NE(refused.errors[0].to_string().find("values of a stack model"), std::string::npos);
}

TEST(gnn_pipeline_test, the_forward_pass_arena_stops_allocating_once_warm) {
  fixture f;
  gnn_pipeline p(*f.ds, *f.model, f.router, f.pool);
  for (int i = 0; i < 5; ++i) p.run(shared_requests(64), psgs_router::choice::small);
  const auto warm = p.arena_allocations();
  for (int i = 0; i < 50; ++i) p.run(shared_requests(64), psgs_router::choice::small);
  EXPECT_LE(p.arena_allocations(), warm + 1);  // at most one growth to a new high-water mark
}

}  // namespace
}  // namespace spindle::serving

namespace spindle::serving {
namespace {

// Fanouts belong to the served model. A 3-layer model on a dataset
// whose metrics used 2 fanouts is refused by name (before: 10 per hop, silently);
// its own fanouts, from model.toml or --fanouts, are what the sampler draws.
TEST(gnn_pipeline_test, fanouts_come_from_the_model_and_a_misfit_is_an_error) {
  fixture f;
  ASSERT_EQ(f.ds->metadata().fanouts.size(), 2u);
  config::model_desc three = f.model->desc();
  three.layers = 3;
  auto misfit = served_fanouts(three, f.ds->metadata());
  ASSERT_FALSE(misfit.has_value());
  EXPECT_NE(misfit.error().message().find("has 3 layers but no fanouts of its own"),
            std::string::npos)
      << misfit.error().message();
  EXPECT_NE(misfit.error().message().find("--fanouts"), std::string::npos);
  three.fanouts = {4, 3, 2};
  ASSERT_TRUE(served_fanouts(three, f.ds->metadata()).has_value());
  EXPECT_EQ(*served_fanouts(three, f.ds->metadata()), (std::vector<int>{4, 3, 2}));
  // The model's own fanouts win over the dataset's; they bound what is sampled.
  nn::model m = std::move(*f.model);
  EXPECT_FALSE(m.set_fanouts({5}).is_ok());  // one per layer
  EXPECT_FALSE(m.set_fanouts({5, 0}).is_ok());
  ASSERT_TRUE(m.set_fanouts({1, 1}).is_ok());
  gnn_pipeline p(*f.ds, m, f.router, f.pool);
  std::vector<gnn_request> one(1);
  one[0] = {{std::int64_t(0)}, 7};
  auto r = p.run(one);
  ASSERT_TRUE(r.errors[0].is_ok()) << r.errors[0].to_string();
  EXPECT_LE(r.work.rows, 3u);  // seed + at most 1 + 1 sampled nodes
  EXPECT_TRUE(config::validate_fanouts({}, 3, "x").is_ok());
  EXPECT_FALSE(config::validate_fanouts({1, 2}, 3, "model.fanouts").is_ok());
  EXPECT_NE(config::validate_fanouts({1, 2}, 3, "model.fanouts")
                .message()
                .find("model.fanouts = [1, 2]: 2 values for a model of 3 layers"),
            std::string::npos);
}

// The large executor as a GPU's is seen by GNNSched's device slots: forward_in
// is asked first, and a model it has no device layers for (here: every model,
// as GAT on a GPU) falls back to the host pass with the same answers.
struct slot_recording_executor final : testing::host_backed_executor {
  int forward_in_calls = 0;
  void* last_stream = nullptr;
  std::string_view name() const override { return "recording"; }
  expected<nn::tensor> forward_in(device_slot slot, const nn::model& m, nn::allocator& a,
                                  std::span<const nn::block> blocks, std::span<const float> degree,
                                  const nn::tensor& x) override {
    ++forward_in_calls;
    last_stream = slot.stream;
    return batch_executor::forward_in(slot, m, a, blocks, degree, x);
  }
};

TEST(gnn_pipeline_test, a_device_slot_goes_to_the_executor_and_falls_back_to_the_host_pass) {
  fixture f;
  auto ex = std::make_shared<slot_recording_executor>();
  gnn_pipeline on_device(*f.ds, *f.model, f.router, f.pool, {}, ex);
  gnn_pipeline on_host(*f.ds, *f.model, f.router, f.pool);
  const auto batch = shared_requests(16);
  auto pb = on_device.prepare(batch), want = on_host.prepare(batch);
  int stream = 0;  // any non-null stream marks a GPU pool's slot
  on_device.compute(*pb, batch, {std::span<std::byte>(), &stream});
  std::vector<std::byte> buffer(colocation::task_bytes(on_host, *want));
  on_host.compute(*want, batch, {buffer, nullptr});
  EXPECT_GE(ex->forward_in_calls, 1);
  EXPECT_EQ(ex->last_stream, &stream);
  for (std::size_t i = 0; i < batch.size(); ++i) {
    ASSERT_TRUE(pb->result.errors[i].is_ok()) << pb->result.errors[i].to_string();
    EXPECT_EQ(pb->result.outputs[i], want->result.outputs[i]) << i;
  }
  // A GPU pool's slot in a pipeline with no GPU executor: named, not a crash.
  auto again = on_host.prepare(batch);
  on_host.compute(*again, batch, {std::span<std::byte>(), &stream});
  EXPECT_EQ(again->result.errors[0].code(), errc::internal);
  EXPECT_NE(again->result.errors[0].message().find("no GPU executor"), std::string::npos);
}

// The device executor reads a batch's rows where its gather left them only for
// the pass over exactly those host rows, once: a later batch whose rows reached
// the same host buffer another way (a remote shard's gather) must upload them.
TEST(gnn_pipeline_test, gathered_device_rows_serve_one_pass_over_the_same_rows_only) {
  std::vector<float> rows(64), other(64);
  device_rows_note note;
  EXPECT_FALSE(note.take(rows.data(), 256));  // nothing noted
  note.note(rows.data(), 256);
  EXPECT_FALSE(note.take(other.data(), 256));  // other rows: and the note is gone
  EXPECT_FALSE(note.take(rows.data(), 256));
  note.note(rows.data(), 256);
  EXPECT_FALSE(note.take(rows.data(), 128));  // same buffer, another size
  note.note(rows.data(), 256);
  EXPECT_TRUE(note.take(rows.data(), 256));
  EXPECT_FALSE(note.take(rows.data(), 256));  // one pass only
  note.note(rows.data(), 256);
  note.forget();  // a gather not done on the device
  EXPECT_FALSE(note.take(rows.data(), 256));
}

}  // namespace
}  // namespace spindle::serving
