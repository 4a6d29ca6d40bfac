// Models as PyG users write them (scripts/pyg_user_models.py: BatchNorm, ELU,
// max aggregation, per-layer widths, PyG's MLP inside GINConv, JumpingKnowledge,
// residual adds, LayerNorm, Linear heads, log_softmax), trained on Cora and
// exported with spindle_client.export.export_pyg, served through the batched
// pipeline with every neighbour sampled (fanouts -1): the answers must equal
// PyG's full-graph model(x, edge_index) on the 1000 test nodes to 1e-4
// relative, and the served accuracy must equal PyG's.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>

#include "../graph/test_util.hpp"
#include "core/npy.hpp"
#include "graph/dataset.hpp"
#include "graph/prepare.hpp"
#include "nn/model.hpp"
#include "serving/gnn_pipeline.hpp"

namespace spindle::serving {
namespace {

const std::string kGolden = SPINDLE_SOURCE_DIR "/tests/nn/golden/";

template <class T>
std::vector<T> load(const std::string& path) {
  auto a = npy_array::open(path);
  EXPECT_TRUE(a.has_value()) << path;
  if (!a) return {};
  auto v = a->as<T>();
  EXPECT_TRUE(v.has_value()) << v.error().to_string();
  return v ? std::vector<T>(v->begin(), v->end()) : std::vector<T>{};
}

// Cora as the fixture script saw it: x rebuilt from the coordinates of its 1s,
// prepared from the same edge_index (each node aggregates its in-neighbours).
const graph::dataset& cora() {
  static std::optional<graph::dataset> ds = [] {
    const std::string dir = graph::testing::temp_dir("pyg_cora");
    const auto ones = load<std::int32_t>(kGolden + "pyg-cora/x_ones.npy");
    const std::int64_t n = std::int64_t(load<std::int64_t>(kGolden + "pyg-cora/labels.npy").size());
    const std::int64_t f = 1433;
    std::vector<float> x(std::size_t(n * f), 0.0f);
    for (std::size_t i = 0; i + 1 < ones.size(); i += 2) x[std::size_t(ones[i] * f + ones[i + 1])] = 1;
    EXPECT_TRUE(write_npy(dir + "/x.npy", dtype::f32, {n, f}, x.data()).has_value());
    graph::prepare_options o;
    o.input = kGolden + "pyg-cora/edge_index.npy";
    o.features = dir + "/x.npy";
    thread_pool pool(1, "prepare");
    auto st = graph::prepare_dataset(o, dir + "/ds", pool);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    auto d = graph::dataset::open(dir + "/ds");
    EXPECT_TRUE(d.has_value());
    return d ? std::optional<graph::dataset>(std::move(*d)) : std::nullopt;
  }();
  return *ds;
}

double pyg_accuracy(const std::string& dir) {
  std::ifstream in(dir + "/pyg.json");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const auto at = text.find("\"pyg_test_accuracy\": ");
  return at == std::string::npos ? -1 : std::stod(text.substr(at + 21));
}

class pyg_golden_test : public ::testing::TestWithParam<std::string> {};

TEST_P(pyg_golden_test, served_answers_equal_pyg_full_graph_answers) {
  const std::string dir = kGolden + "pyg-" + GetParam();
  const auto& ds = cora();
  nn::heap_allocator alloc;
  auto m = nn::model::load(dir, alloc);
  ASSERT_TRUE(m.has_value()) << m.error().to_string();
  psgs_router router{psgs_calibration{}, routing_policy::fixed};
  thread_pool pool(1, "golden");
  gnn_pipeline p(ds, *m, router, pool);
  const auto nodes = load<std::int64_t>(kGolden + "pyg-cora/test_nodes.npy");
  const auto labels = load<std::int64_t>(kGolden + "pyg-cora/labels.npy");
  const auto want = load<float>(dir + "/expected.npy");
  const std::size_t classes = want.size() / nodes.size();
  double worst = 0;
  int correct = 0, agree = 0;
  for (std::size_t b = 0; b < nodes.size(); b += 100) {  // batches of 100 one-seed calls
    std::vector<gnn_request> batch;
    for (std::size_t i = b; i < std::min(nodes.size(), b + 100); ++i) batch.push_back({{nodes[i]}, 0});
    const auto res = p.run(batch, b % 200 ? psgs_router::choice::large : psgs_router::choice::small);
    for (std::size_t i = 0; i < batch.size(); ++i) {
      ASSERT_TRUE(res.errors[i].is_ok()) << res.errors[i].to_string();
      const auto& got = res.outputs[i];
      ASSERT_EQ(got.size(), classes);
      const float* w = &want[(b + i) * classes];
      std::size_t arg_got = 0, arg_want = 0;
      for (std::size_t c = 0; c < classes; ++c) {
        worst = std::max(worst, std::abs(double(got[c]) - w[c]) / std::max(1.0, std::abs(double(w[c]))));
        if (got[c] > got[arg_got]) arg_got = c;
        if (w[c] > w[arg_want]) arg_want = c;
      }
      correct += std::int64_t(arg_got) == labels[std::size_t(nodes[b + i])];
      agree += arg_got == arg_want;
    }
  }
  const double accuracy = double(correct) / double(nodes.size());
  std::printf("%s: served accuracy %.3f (PyG %.3f), %d/%zu predictions as PyG's, worst relative "
              "difference %.2e\n",
              GetParam().c_str(), accuracy, pyg_accuracy(dir), agree, nodes.size(), worst);
  EXPECT_LE(worst, 1e-4);
  EXPECT_EQ(agree, int(nodes.size()));
  EXPECT_EQ(correct, int(std::lround(pyg_accuracy(dir) * double(nodes.size()))));
}

INSTANTIATE_TEST_SUITE_P(cora, pyg_golden_test,
                         ::testing::Values("sage-bn", "gat-elu", "sage-max", "gcn-widths", "gin-jk",
                                           "sage-residual"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (auto& c : n) c = c == '-' ? '_' : c;
                           return n;
                         });

}  // namespace
}  // namespace spindle::serving
