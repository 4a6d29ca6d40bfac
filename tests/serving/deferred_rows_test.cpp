// Rows a device executor keeps on the device for its own pass (gather_for_pass)
// reach every other reader through host_rows: a stand-in executor keeps them to
// itself and leaves the host buffer NaN, as a GPU does, so any pipeline path
// that read them on the host without asking (several graphs in a batch, named
// outputs, link pairs, a cluster's feature source) would answer differently from
// the host pipeline. Each case must answer as the host pipeline does, bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <map>

#include "../actors/small_gnn.hpp"
#include "serving/gnn_pipeline.hpp"
#include "tests/serving/host_backed_executor.hpp"

namespace spindle::serving {
namespace {

// A GPU executor's deferred rows, on the host: one batch's rows kept at a time
// (a second gather brings the first's back, as the CUDA executor does), the
// host buffer poisoned until host_rows, its own pass reading its own copy.
class deferring_executor final : public testing::host_backed_executor {
 public:
  std::string_view name() const override { return "deferring"; }
  void gather_for_pass(std::span<const float> table, std::int64_t dim,
                       std::span<const std::int64_t> ids, float* out) override {
    std::vector<float> rows(ids.size() * std::size_t(dim));
    host.gather(table, dim, ids, rows.data());
    keep(out, std::move(rows));
  }
  status gather_from(const feature_source& source, std::int64_t dim,
                     std::span<const std::int64_t> ids, float* out, bool for_pass) override {
    if (!for_pass) return source(ids, out);
    std::vector<float> rows(ids.size() * std::size_t(dim));
    SPINDLE_TRY(source(ids, rows.data()));
    keep(out, std::move(rows));
    return status::ok();
  }
  status host_rows(float* out) override {
    if (out == kept_at_) bring_back();
    return status::ok();
  }
  void drop_rows() override {
    kept_at_ = nullptr;
    kept_.clear();
  }
  expected<nn::tensor> forward(const nn::model& m, nn::allocator& a,
                               std::span<const nn::block> blocks, std::span<const float> degree,
                               const nn::tensor& x) override {
    if (x.data() != kept_at_) return host.forward(m, a, blocks, degree, x);
    ++device_passes;  // the pass reads the rows where the gather left them
    return host.forward(m, a, blocks, degree, nn::tensor::borrow(kept_.data(), x.shape()));
  }
  int device_passes = 0, brought_back = 0;

 private:
  void keep(float* out, std::vector<float> rows) {
    if (kept_at_) bring_back();  // one batch's rows on the device at a time
    std::fill(out, out + rows.size(), std::numeric_limits<float>::quiet_NaN());
    kept_ = std::move(rows);
    kept_at_ = out;
  }
  void bring_back() {
    std::copy(kept_.begin(), kept_.end(), kept_at_);
    ++brought_back;
    kept_at_ = nullptr;
    kept_.clear();
  }
  std::vector<float> kept_;
  float* kept_at_ = nullptr;
};

struct deferred_fixture : actors::test_support::small_gnn {
  psgs_router router{psgs_calibration{}, routing_policy::fixed};
  deferred_fixture() : small_gnn("deferred_ds", 12, 16, 32, 5) {}
  // `m` loaded from `desc` (kept alive with the fixture).
  const nn::model& load(const config::model_desc& desc, const std::string& suffix) {
    const auto dir = model_dir + suffix;
    EXPECT_TRUE(nn::init_model(desc, 3, dir).is_ok());
    auto m = nn::model::load(dir, more_weights);
    std::filesystem::remove_all(dir);
    EXPECT_TRUE(m.has_value()) << m.error().message();
    extra.push_back(std::make_unique<nn::model>(std::move(*m)));
    return *extra.back();
  }
  nn::heap_allocator more_weights;
  std::vector<std::unique_ptr<nn::model>> extra;
};

// `batch`, then each of its requests alone (its graph then the batch's last,
// whose rows the executor still holds when the pass comes), through a pipeline
// whose large executor defers its rows and through the host pipeline's small
// one: equal answers, bit for bit, none NaN.
void expect_batch_answers(deferred_fixture& f, const nn::model& m,
                          const std::vector<gnn_request>& batch, const feature_source& source);
void expect_host_answers(deferred_fixture& f, const nn::model& m,
                         const std::vector<gnn_request>& batch, feature_source source = {}) {
  expect_batch_answers(f, m, batch, source);
  for (const auto& r : batch) expect_batch_answers(f, m, {r}, source);
}

void expect_batch_answers(deferred_fixture& f, const nn::model& m,
                          const std::vector<gnn_request>& batch, const feature_source& source) {
  auto ex = std::make_shared<deferring_executor>();
  gnn_pipeline device(*f.ds, m, f.router, f.pool, source, ex);
  gnn_pipeline host(*f.ds, m, f.router, f.pool, source);
  const auto got = device.run(batch, psgs_router::choice::large);
  const auto want = host.run(batch, psgs_router::choice::small);
  for (std::size_t i = 0; i < batch.size(); ++i) {
    ASSERT_TRUE(want.errors[i].is_ok()) << want.errors[i].to_string();
    ASSERT_TRUE(got.errors[i].is_ok()) << i << ": " << got.errors[i].to_string();
    EXPECT_EQ(got.outputs[i], want.outputs[i]) << "request " << i;
  }
  EXPECT_GT(ex->device_passes + ex->brought_back, 0) << "the executor kept no rows";
}

TEST(deferred_rows_test, several_graphs_in_a_batch_answer_as_the_host) {
  deferred_fixture f;
  // Three seeded calls (a graph each) and shared ones (one graph): four graphs.
  std::vector<gnn_request> batch = {{{5}, 11}, {{17}, 0}, {{300, 2}, 12}, {{9}, 0}, {{40}, 13}};
  expect_host_answers(f, *f.model, batch);
}

TEST(deferred_rows_test, named_outputs_read_the_rows_on_the_host) {
  deferred_fixture f;
  auto d = testing::small_stack_desc();
  ASSERT_TRUE(d.has_value()) << d.error().message();
  const auto& stack = f.load(*d, "-deferred-stack");
  gnn_request named{{5, 17}, 42}, plain{{5, 17}, 42};
  named.outputs = {"act", "conv1"};
  expect_host_answers(f, stack, {plain, named, {{9}, 0}});
}

TEST(deferred_rows_test, link_pairs_answer_as_the_host) {
  deferred_fixture f;
  auto d = f.model->desc();
  d.task = "link";
  const auto& link = f.load(d, "-deferred-link");
  expect_host_answers(f, link, {{{5, 17, 17, 3}, 42, true}, {{1, 2}, 0, true}, {{8}, 0, false}});
}

TEST(deferred_rows_test, rows_through_a_feature_source_answer_as_the_host) {
  deferred_fixture f;
  const auto* ds = &*f.ds;
  feature_source source = [ds](std::span<const std::int64_t> ids, float* out) {
    gather_rows(ds->features(), ds->feature_dim(), ids, out);  // a cluster's shards, here
    return status::ok();
  };
  expect_host_answers(f, *f.model, {{{5}, 11}, {{17}, 0}, {{9}, 12}}, source);
}

}  // namespace
}  // namespace spindle::serving
