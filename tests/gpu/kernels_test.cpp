// The per-element logic the CUDA kernels run (gpu/kernels/), checked on the
// host against the host operators: the sampling draw gives the host sampler's
// neighbours for the same seed, hop and node; the SpMM element equals
// nn::propagate's rows; the activations equal nn's. Without a GPU the launchers
// answer an error naming the kernel (and nothing crashes).
#include <gtest/gtest.h>

#include <random>

#include "features/feature_tiers.hpp"
#include "gpu/device.hpp"
#include "gpu/device_arena.hpp"
#include "gpu/gnn_kernels.hpp"
#include "gpu/kernels/sample_draw.hpp"
#include "gpu/memory_pool.hpp"
#include "gpu/nccl_exchange.hpp"
#include "graph/rmat.hpp"
#include "graph/sampler.hpp"
#include "nn/model.hpp"
#include "nn/ops.hpp"
#include "serving/cuda_sampling.hpp"
#include "tests/graph/test_util.hpp"
#include "tests/gpu/random_block.hpp"

namespace spindle::gpu {
namespace {

graph::csr_graph small_graph() {
  return graph::testing::rmat_graph(10, 24, false);  // edge factor 24: many rows above the fanouts
}

TEST(kernels, the_device_draw_gives_the_host_samplers_neighbours) {
  const auto g = small_graph();
  const auto v = g.view();
  std::vector<std::int64_t> seeds(200);
  for (std::size_t i = 0; i < seeds.size(); ++i) seeds[i] = std::int64_t(i * 5);
  graph::inline_executor ex;
  std::int64_t drawn_rows = 0;
  for (int fanout : {3, 10, 25, 64}) {
    graph::sample_options o{{fanout}, false, 1234};
    auto s = ex.sample(v, seeds, o);
    ASSERT_TRUE(s.has_value());
    for (std::size_t i = 0; i < seeds.size(); ++i) {
      const std::int64_t row = s->seed_local[i], node = seeds[i];
      const std::int64_t begin = v.indptr[node], deg = v.indptr[node + 1] - begin;
      std::vector<std::int64_t> pos(std::size_t(std::max<std::int64_t>(deg, 1)));
      const std::int64_t n = draw_row(o.seed, 1, node, deg, fanout, pos.data());
      drawn_rows += deg > fanout;
      ASSERT_EQ(n, s->indptr[row + 1] - s->indptr[row]) << node;
      for (std::int64_t k = 0; k < n; ++k)
        EXPECT_EQ(v.neighbour(begin + pos[k]), s->nodes[s->indices[s->indptr[row] + k]])
            << "node " << node << " fanout " << fanout << " position " << k;
    }
  }
  EXPECT_GT(drawn_rows, 100);  // the Floyd path ran, not only whole rows
}

// The device executor's frame with the device's draw run on the host: the same
// subgraph as the inline executor, over two hops (the second hop's frontier
// comes from the first's draws).
TEST(kernels, a_hop_drawer_with_the_device_draw_samples_as_the_inline_executor) {
  const auto g = small_graph();
  const auto v = g.view();
  const std::vector<std::int64_t> seeds = {3, 7, 7, 100, 512, 1000};
  const graph::sample_options o{{10, 5}, false, 42};
  auto host_draw = [&](std::span<const std::int64_t> frontier, int hop, int fanout,
                       std::vector<std::int64_t>& globals, std::vector<std::int64_t>& sizes) {
    std::vector<std::int64_t> pos(4096);
    for (auto node : frontier) {
      const std::int64_t begin = v.indptr[node], deg = v.indptr[node + 1] - begin;
      const std::int64_t n = draw_row(o.seed, hop, node, deg, fanout, pos.data());
      for (std::int64_t k = 0; k < n; ++k) globals.push_back(v.neighbour(begin + pos[k]));
      sizes.push_back(n);
    }
    return status::ok();
  };
  graph::sampled_subgraph via_drawer;
  ASSERT_TRUE(graph::sample_with_drawer(v, seeds, o, host_draw, via_drawer).is_ok());
  graph::inline_executor ex;
  auto want = ex.sample(v, seeds, o);
  ASSERT_TRUE(want.has_value());
  EXPECT_EQ(via_drawer.nodes, want->nodes);
  EXPECT_EQ(via_drawer.hop_end, want->hop_end);
  EXPECT_EQ(via_drawer.seed_local, want->seed_local);
  EXPECT_EQ(via_drawer.indptr, want->indptr);
  EXPECT_EQ(via_drawer.indices, want->indices);
  // A drawer's error is the call's; a drawer that loses rows is caught.
  auto failing = [](auto, int, int, auto&, auto&) {
    return make_error(errc::unavailable, "device lost");
  };
  EXPECT_EQ(graph::sample_with_drawer(v, seeds, o, failing, via_drawer).message(), "device lost");
  auto short_one = [](auto, int, int, auto&, std::vector<std::int64_t>& sizes) {
    sizes.push_back(0);
    return status::ok();
  };
  EXPECT_NE(graph::sample_with_drawer(v, seeds, o, short_one, via_drawer)
                .message()
                .find("1 row sizes for 5 rows"),
            std::string::npos);
}

TEST(kernels, the_draw_is_uniform_over_positions) {
  std::vector<int> hits(20, 0);
  std::int64_t out[5];
  for (std::uint64_t node = 0; node < 20000; ++node) {
    ASSERT_EQ(draw_row(7, 1, std::int64_t(node), 20, 5, out), 5);
    for (int k = 0; k < 5; ++k) {
      for (int j = 0; j < k; ++j) ASSERT_NE(out[j], out[k]);  // distinct
      ++hits[std::size_t(out[k])];
    }
  }
  for (int h : hits) EXPECT_NEAR(h, 5000, 300);  // 20000 x 5 / 20
}

TEST(kernels, the_spmm_element_equals_the_host_aggregation) {
  std::mt19937 rng(3);
  const std::int64_t dst = 50, src = 120, width = 37;
  auto [indptr, indices] = random_block(rng, dst, src, 9, false);
  auto x = normal_values(rng, src * width);
  nn::heap_allocator alloc;
  const nn::block b{dst, src, indptr, indices};
  const auto xt = nn::tensor::borrow(x.data(), {src, width});
  for (auto [op, dev] : {std::pair{nn::reduce_op::sum, spmm_reduce::sum},
                         {nn::reduce_op::mean, spmm_reduce::mean},
                         {nn::reduce_op::max, spmm_reduce::max},
                         {nn::reduce_op::min, spmm_reduce::min}}) {
    auto host = nn::propagate(alloc, b, xt, op);
    ASSERT_TRUE(host.has_value());
    for (std::int64_t r = 0; r < dst; ++r)
      for (std::int64_t c = 0; c < width; ++c)
        ASSERT_EQ(spmm_element(indptr.data(), indices.data(), x.data(), width, r, c, dev),
                  host->row(r)[c])
            << "row " << r << " column " << c << " op " << int(dev);
  }
}

// GCN's normalized aggregation: the device element equals nn::propagate_gcn
// (which may fuse multiply-adds, hence a tolerance); with self-loop edges.
TEST(kernels, the_gcn_element_equals_the_host_normalized_aggregation) {
  std::mt19937 rng(4);
  const std::int64_t dst = 40, src = 90, width = 17;
  auto [indptr, indices] = random_block(rng, dst, src, 7, true);
  const auto degree = nn::gcn_degrees(indptr, indices, src);
  auto h = normal_values(rng, src * width);
  nn::heap_allocator alloc;
  auto host = nn::propagate_gcn(alloc, {dst, src, indptr, indices},
                                nn::tensor::borrow(h.data(), {src, width}), degree);
  ASSERT_TRUE(host.has_value());
  for (std::int64_t r = 0; r < dst; ++r)
    for (std::int64_t c = 0; c < width; ++c) {
      const float want = host->row(r)[c];
      EXPECT_NEAR(gcn_element(indptr.data(), indices.data(), h.data(), degree.data(), width, r, c),
                  want, 1e-6f * std::max(1.0f, std::abs(want)))
          << r << "," << c;
    }
  EXPECT_EQ(gin_combine(2.0f, 3.0f, 1.5f), 6.5f);  // Σ_j x_j + (1 + eps) x_i
}

// A stack model's GCNConv options (self-loop weight 1 or 2, or none; neighbour
// counts as the graph's or the block's): the device element equals
// nn::propagate_gcn with gcn_options.
TEST(kernels, the_gcn_options_element_equals_the_host_aggregation) {
  std::mt19937 rng(14);
  const std::int64_t dst = 40, src = 90, width = 11;
  auto [indptr, indices] = random_block(rng, dst, src, 7, true);
  std::vector<float> neighbours(static_cast<std::size_t>(src));
  for (auto& n : neighbours) n = float(rng() % 30);  // some 0: 1/sqrt(0) taken as 0
  auto h = normal_values(rng, src * width);
  nn::heap_allocator alloc;
  for (auto [self_loops, improved] : {std::pair{true, false}, {true, true}, {false, false}}) {
    nn::gcn_options o{self_loops, improved, true};
    auto host = nn::propagate_gcn(alloc, {dst, src, indptr, indices},
                                  nn::tensor::borrow(h.data(), {src, width}), neighbours, o);
    ASSERT_TRUE(host.has_value());
    const float fill = self_loops ? (improved ? 2.0f : 1.0f) : 0.0f;
    for (std::int64_t r = 0; r < dst; ++r)
      for (std::int64_t c = 0; c < width; ++c) {
        const float want = host->row(r)[c];
        EXPECT_NEAR(gcn_element_ex(indptr.data(), indices.data(), h.data(), neighbours.data(), fill,
                                   width, r, c),
                    want, 1e-5f * std::max(1.0f, std::abs(want)))
            << r << "," << c << " fill " << fill;
      }
  }
}

// The node-wise layers of a stack (BatchNorm, LayerNorm, L2 normalize, PReLU,
// GELU, tanh): the device's per-element functions equal the host operators.
TEST(kernels, the_norm_and_activation_elements_equal_the_host_layers) {
  std::mt19937 rng(15);
  const std::int64_t rows = 6, cols = 13;
  const auto x = normal_values(rng, rows * cols);
  const auto p = normal_values(rng, 4 * cols);
  std::vector<float> var(p.begin() + cols, p.begin() + 2 * cols);
  for (auto& v : var) v = 0.5f + std::abs(v);
  const std::span<const float> mean(p.data(), std::size_t(cols)), w(p.data() + 2 * cols, std::size_t(cols)),
      bias(p.data() + 3 * cols, std::size_t(cols));
  nn::heap_allocator alloc;
  auto fresh = [&] {
    auto t = nn::tensor::empty(alloc, {rows, cols}).value();
    std::copy(x.begin(), x.end(), t.data());
    return t;
  };
  auto bn = fresh();
  nn::batch_norm_(bn, mean, var, w, bias, 1e-5f);
  auto ln = fresh();
  nn::layer_norm_(ln, w, bias, 1e-5f);
  auto l2 = fresh();
  nn::l2_normalize_rows_(l2);
  auto pr = fresh();
  nn::prelu_(pr, w);
  auto ge = fresh();
  nn::gelu_(ge, false);
  auto th = fresh();
  nn::tanh_(th);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = x.data() + r * cols;
    float m = 0, inv = 0;
    layer_norm_stats(row, cols, 1e-5f, m, inv);
    double sq = 0;
    for (std::int64_t c = 0; c < cols; ++c) sq += double(row[c]) * row[c];
    for (std::int64_t c = 0; c < cols; ++c) {
      const float v = row[c];
      EXPECT_NEAR(bn.row(r)[c], batch_norm(v, mean[c], var[c], 1e-5f, w[c], bias[c]),
                  1e-6f * std::max(1.0f, std::abs(bn.row(r)[c])));  // a fused multiply-add may differ
      EXPECT_EQ(ln.row(r)[c], layer_norm(v, m, inv, w[c], bias[c]));
      EXPECT_EQ(l2.row(r)[c], v * l2_scale(sq));
      EXPECT_EQ(pr.row(r)[c], prelu(v, w[c]));
      EXPECT_EQ(ge.row(r)[c], activate(activation::gelu, v, 0));
      EXPECT_EQ(th.row(r)[c], activate(activation::tanh, v, 0));
    }
  }
  EXPECT_NEAR(gelu(1.0f), 0.8413447f, 1e-6f);  // torch.nn.functional.gelu(1.0)
  EXPECT_NEAR(gelu_tanh(1.0f), 0.8411920f, 1e-6f);
}

// GAT's attention aggregation (4 heads of 8, self-loop edges in some rows): the
// device element equals nn::propagate_gat (same edge order and softmax in
// double; the host may fuse multiply-adds, hence a tolerance).
TEST(kernels, the_gat_element_equals_the_host_attention_aggregation) {
  std::mt19937 rng(11);
  const std::int64_t dst = 40, src = 90;
  const int heads = 4;
  const std::int64_t c = 8, hc = heads * c;
  auto [indptr, indices] = random_block(rng, dst, src, 8, true);
  auto h = normal_values(rng, src * hc), att_src = normal_values(rng, hc),
       att_dst = normal_values(rng, hc);
  nn::heap_allocator alloc;
  auto host = nn::propagate_gat(alloc, {dst, src, indptr, indices},
                                nn::tensor::borrow(h.data(), {src, hc}), heads, att_src, att_dst);
  ASSERT_TRUE(host.has_value());
  std::vector<float> s_src(std::size_t(src * heads)), s_dst(std::size_t(dst * heads));
  for (std::int64_t j = 0; j < src; ++j)
    for (int k = 0; k < heads; ++k) {
      s_src[std::size_t(j * heads + k)] = gat_node_score(h.data(), hc, c, att_src.data(), j, k);
      if (j < dst)
        s_dst[std::size_t(j * heads + k)] = gat_node_score(h.data(), hc, c, att_dst.data(), j, k);
    }
  for (std::int64_t r = 0; r < dst; ++r)
    for (std::int64_t col = 0; col < hc; ++col) {
      const float want = host->row(r)[col];
      EXPECT_NEAR(gat_element(indptr.data(), indices.data(), h.data(), hc, c, s_src.data(),
                              s_dst.data(), heads, r, col, 0.2f),
                  want, 1e-5f * std::max(1.0f, std::abs(want)))
          << "row " << r << " column " << col;
    }
}

TEST(kernels, the_activations_equal_the_host_operators) {
  std::vector<float> v;
  for (int i = -400; i <= 400; ++i) v.push_back(float(i) / 37.0f);
  nn::heap_allocator alloc;
  auto run = [&](auto op) {
    auto t = nn::tensor::empty(alloc, {1, std::int64_t(v.size())}).value();
    std::copy(v.begin(), v.end(), t.data());
    op(t);
    return std::vector<float>(t.data(), t.data() + t.numel());
  };
  const auto relu = run([](nn::tensor& t) { nn::relu_(t); });
  const auto elu = run([](nn::tensor& t) { nn::elu_(t, 0.7f); });
  const auto leaky = run([](nn::tensor& t) { nn::leaky_relu_(t, 0.2f); });
  for (std::size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(activate(activation::relu, v[i], 0), relu[i]);
    EXPECT_EQ(activate(activation::elu, v[i], 0.7f), elu[i]);
    EXPECT_EQ(activate(activation::leaky_relu, v[i], 0.2f), leaky[i]);
    EXPECT_FLOAT_EQ(activate(activation::sigmoid, v[i], 0), 1.0f / (1.0f + std::exp(-v[i])));
    EXPECT_EQ(activate(activation::none, v[i], 0), v[i]);
  }
}

// Quiver's feature tiers: the highest-FAP rows go to the device table within
// the budget, and the gather kernel's element function over the two tiers
// reads exactly the plain table's rows.
TEST(kernels, the_tiered_gather_reads_the_plain_tables_rows) {
  const std::int64_t n = 1000, dim = 6;
  std::vector<double> fap(n);
  std::mt19937 rng(9);
  for (auto& f : fap) f = std::exponential_distribution<double>(1.0)(rng);
  const auto t = features::plan_feature_tiers(fap, n, dim, 100 * dim * sizeof(float) + 5);
  ASSERT_EQ(t.device_nodes.size(), 100u);
  double min_in = 1e9, max_out = 0, total = 0, kept = 0;
  for (std::int64_t v = 0; v < n; ++v) {
    total += fap[v];
    if (t.tier[v] == 0)
      min_in = std::min(min_in, fap[v]), kept += fap[v];
    else
      max_out = std::max(max_out, fap[v]);
  }
  EXPECT_GE(min_in, max_out);  // the device holds the hottest rows
  EXPECT_NEAR(t.device_fap_share, kept / total, 1e-12);
  std::vector<float> table(std::size_t(n * dim));
  for (std::size_t i = 0; i < table.size(); ++i) table[i] = float(i) * 0.5f;
  std::vector<float> device_table;
  for (auto v : t.device_nodes)
    device_table.insert(device_table.end(), table.begin() + v * dim, table.begin() + (v + 1) * dim);
  const tier_lookup lookup{t.tier.data(), t.row.data()};
  for (std::int64_t v = 0; v < n; ++v)
    for (std::int64_t c = 0; c < dim; ++c)
      ASSERT_EQ(gather_element(lookup, device_table.data(), table.data(), dim, v, c),
                table[std::size_t(v * dim + c)])
          << v << "," << c;
  // No budget: every row on the host; a budget past the table: every row on the device.
  EXPECT_TRUE(features::plan_feature_tiers(fap, n, dim, 0).device_nodes.empty());
  EXPECT_EQ(features::plan_feature_tiers(fap, n, dim, 1u << 30).device_nodes.size(), std::size_t(n));
}

// The multi-GPU exchange's bookkeeping: each GPU asks the owner of every row it
// needs, in its own order, and the answers land in the positions it asked.
// Several GPUs: partitioned (NVLink), the hottest 3 x fits rows are dealt
// round-robin in FAP order, each held by one GPU and fetched by the others;
// replicated (PCIe), every GPU holds the same hottest rows and fetches nothing.
TEST(kernels, several_gpus_partition_or_replicate_the_device_tier) {
  const std::int64_t n = 1000, dim = 16;
  std::vector<double> fap(static_cast<std::size_t>(n));
  for (std::int64_t v = 0; v < n; ++v) fap[std::size_t(v)] = double((v * 37) % n);
  const std::size_t budget = 50 * dim * sizeof(float);  // 50 rows per GPU
  const auto one = features::plan_feature_tiers(fap, n, dim, budget);
  const auto part = features::plan_gpu_tiers(fap, n, dim, budget, 3, true);
  ASSERT_EQ(part.per_gpu.size(), 3u);
  const auto hottest = features::plan_feature_tiers(fap, n, dim, 3 * budget).device_nodes;
  ASSERT_EQ(hottest.size(), 150u);
  for (std::size_t r = 0; r < hottest.size(); ++r) {
    const auto v = hottest[r];
    const int g = int(r % 3);
    EXPECT_EQ(part.owner[std::size_t(v)], g) << "node " << v;
    for (int h = 0; h < 3; ++h) {
      EXPECT_EQ(part.per_gpu[std::size_t(h)].tier[std::size_t(v)], h == g ? 0 : 1);
      EXPECT_EQ(part.from_peer(h, v), h != g);
    }
  }
  std::int64_t held = 0;
  for (const auto& t : part.per_gpu) held += std::int64_t(t.device_nodes.size());
  EXPECT_EQ(held, 150);
  EXPECT_GT(part.device_fap_share, one.device_fap_share);
  for (std::int64_t v = 0; v < n; ++v) {
    if (part.owner[std::size_t(v)] < 0) {
      EXPECT_FALSE(part.from_peer(0, v));
    }
  }
  const auto rep = features::plan_gpu_tiers(fap, n, dim, budget, 3, false);
  ASSERT_EQ(rep.per_gpu.size(), 3u);
  for (const auto& t : rep.per_gpu) EXPECT_EQ(t.device_nodes, one.device_nodes);
  for (std::int64_t v = 0; v < n; ++v) EXPECT_FALSE(rep.from_peer(1, v));
  EXPECT_DOUBLE_EQ(rep.device_fap_share, one.device_fap_share);
}

TEST(kernels, the_exchange_plan_asks_each_owner_for_its_rows) {
  const std::vector<std::vector<std::int64_t>> wanted = {{0, 5, 2, 7}, {1, 3, 4}, {6, 8}};
  auto owner = [](std::int64_t id) { return int(id % 3); };  // a 3-way partitioned tier
  const auto p = plan_exchange(wanted, 3, owner);
  for (int d = 0; d < 3; ++d) {
    std::vector<std::int64_t> back(wanted[std::size_t(d)].size(), -1);
    for (int s = 0; s < 3; ++s)
      for (std::size_t k = 0; k < p.ask[d][s].size(); ++k) {
        EXPECT_EQ(owner(p.ask[d][s][k]), s);
        back[p.slot[d][s][k]] = p.ask[d][s][k];
      }
    EXPECT_EQ(back, wanted[std::size_t(d)]);  // every row asked once, back in place
  }
  EXPECT_EQ(p.remote_rows(), 5u);  // 5, 2, 7 | 3 | 6 live on another GPU
  EXPECT_EQ(sharing_for(true), tier_sharing::partition);
  EXPECT_EQ(sharing_for(false), tier_sharing::replicate);
  auto group = nccl_group::create(2);
  const bool two_gpus = query_devices().devices.size() >= 2 &&
                        query_devices().devices.front().kind == device_kind::cuda;
  EXPECT_EQ(group.has_value(), two_gpus);  // no GPUs: refused, naming why
}

// A fetch's received rows (owner by owner, as the exchange lands them) placed
// by landing_positions and the place kernel's logic: every row ends at the
// batch position its id had, among rows gathered locally.
TEST(kernels, fetched_rows_land_where_the_batch_wants_them) {
  const std::int64_t dim = 3;
  auto owner = [](std::int64_t id) { return int(id % 3); };
  auto row_of = [&](std::int64_t id, std::int64_t c) { return float(id * 10 + c); };
  // GPU 1's batch: ids at positions 0..7; its own rows (id % 3 == 1) are local.
  const std::vector<std::int64_t> batch = {9, 4, 2, 7, 5, 12, 1, 8};
  std::vector<std::int64_t> peer_ids, peer_at;
  for (std::size_t k = 0; k < batch.size(); ++k)
    if (owner(batch[k]) != 1) peer_ids.push_back(batch[k]), peer_at.push_back(std::int64_t(k));
  const auto plan = plan_exchange({{}, peer_ids, {}}, 3, owner);
  std::vector<float> landing;  // what the NCCL round leaves on GPU 1
  for (int s = 0; s < 3; ++s)
    for (auto id : plan.ask[1][std::size_t(s)])
      for (std::int64_t c = 0; c < dim; ++c) landing.push_back(row_of(id, c));
  const auto to = landing_positions(plan, 1, peer_at);
  ASSERT_EQ(to.size(), peer_ids.size());
  std::vector<float> out(batch.size() * dim, -1.0f);
  place_rows(landing.data(), to.data(), std::int64_t(to.size()), dim, out.data());
  for (std::size_t k = 0; k < batch.size(); ++k)
    for (std::int64_t c = 0; c < dim; ++c)
      EXPECT_EQ(out[k * dim + std::size_t(c)], owner(batch[k]) == 1 ? -1.0f : row_of(batch[k], c))
          << "position " << k;
}

TEST(kernels, without_a_gpu_the_launchers_answer_an_error) {
  if (query_devices().devices.front().kind == device_kind::cuda) GTEST_SKIP() << "a GPU exists";
  auto p = device_alloc(1024);
  ASSERT_FALSE(p.has_value());
  EXPECT_FALSE(p.error().message().empty());
  float x = 1;
  auto st = activation_async(&x, 1, activation::relu, 0, nullptr);
  EXPECT_FALSE(st.is_ok());
  EXPECT_FALSE(sample_hop_async({}, nullptr, 1, 100, 1, 1, nullptr, nullptr, nullptr).is_ok());
  const auto g = small_graph();
  auto ex = serving::cuda_sampling_executor::create(g.view());
  ASSERT_FALSE(ex.has_value());  // no device: refused, naming why
  EXPECT_FALSE(ex.error().message().empty());
  EXPECT_EQ(resolve_device("auto").value(), device_kind::host);
  EXPECT_EQ(resolve_device("host").value(), device_kind::host);
  ASSERT_FALSE(resolve_device("cuda").has_value());
  EXPECT_NE(resolve_device("cuda").error().message().find("--device cuda: "), std::string::npos);
  EXPECT_FALSE(resolve_device("tpu").has_value());
  EXPECT_FALSE(device_arena::create(1 << 20).has_value());
  EXPECT_FALSE(stream_create().has_value());
  pinned_buffer pinned;
  EXPECT_FALSE(pinned.reserve(4096).has_value());
  device_buffer scratch(0);
  EXPECT_FALSE(scratch.reserve(4096).has_value());
  EXPECT_EQ(scratch.data(), nullptr);
  // The executors and the several-GPU pieces are refused, named, not half-built.
  EXPECT_FALSE(serving::device_csr::create(g.view()).has_value());
  auto replicated_pool = memory_pool::create(4096, device_kind::cuda);
  EXPECT_FALSE(replicated_pool.has_value());
  auto group = nccl_group::create(2);
  ASSERT_FALSE(group.has_value());
  EXPECT_NE(group.error().message().find("2 GPUs"), std::string::npos) << group.error().message();
}

}  // namespace
}  // namespace spindle::gpu
