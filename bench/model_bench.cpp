// Model throughput and latency per batch size: GraphSAGE, GCN, GAT,
// GIN (2 layers, hidden 256, [25,10] sampled blocks of R-MAT scale 16 with 128
// features); the same GraphSAGE as a stack model (what spindle_client.export
// writes: the interpreter's cost) and a stack with BatchNorm, ELU and
// log_softmax at the same widths; GATConv, GATv2Conv and TransformerConv stacks
// at GAT's widths; the same stack as a link model scoring pairs
// by the dot product and by an MLP decoder (batch = pairs); and DLRM(A) from Hera Table I (dense 128-64-64, top 256-64-1, 8
// tables x 80 lookups x 64 wide; 100k rows per table here, not 2 GB); R-GAT on a
// typed IGBH-shaped graph (4 edge types, 2^18 nodes, institutes featureless with a
// learnt table) beside the same layers on
// its edges untyped. Baseline
// in the same run: this machine's raw sgemm FLOP/s (OpenBLAS, 1 thread) and
// Eigen's, which is how the GEMM library was picked. Model FLOP/s counts the
// dense layers' 2*m*n*k only.
//
// usage: model_bench [REPS=20]
#include <cblas.h>
#include <fmt/format.h>

#include <Eigen/Dense>
#include <cstdio>
#include <filesystem>
#include <random>

#include "bench/bench_util.hpp"
#include "core/progress.hpp"
#include "graph/rmat.hpp"
#include "graph/sampler.hpp"
#include "nn/link_decoder.hpp"
#include "nn/bf16_gemm.hpp"
#include "core/blas_kernels.hpp"
#include "nn/model.hpp"

using namespace spindle;

namespace {

double openblas_gflops(int m, int n, int k) {
  std::vector<float> a(std::size_t(m) * k, 0.5f), b(std::size_t(n) * k, 0.25f),
      c(std::size_t(m) * n);
  auto t0 = std::chrono::steady_clock::now();
  int reps = 0;
  while (bench::seconds_since(t0) < 0.3 || reps < 3) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1, a.data(), k, b.data(), k, 0,
                c.data(), n);
    ++reps;
  }
  return 2.0 * m * n * k * reps / bench::seconds_since(t0) / 1e9;
}

double eigen_gflops(int m, int n, int k) {
  Eigen::MatrixXf a = Eigen::MatrixXf::Constant(m, k, 0.5f),
                  b = Eigen::MatrixXf::Constant(n, k, 0.25f);
  Eigen::MatrixXf c(m, n);
  auto t0 = std::chrono::steady_clock::now();
  int reps = 0;
  while (bench::seconds_since(t0) < 0.3 || reps < 3) {
    c.noalias() = a * b.transpose();
    ++reps;
  }
  return 2.0 * m * n * k * reps / bench::seconds_since(t0) / 1e9;
}

// Dense-layer FLOPs of one GNN forward over `blocks`.
double gnn_flops(const config::model_desc& d, const std::vector<nn::block>& blocks) {
  double f = 0;
  for (int l = 0; l < d.layers; ++l) {
    const double in =
        l == 0 ? d.in : (d.arch == config::model_arch::gat ? d.heads * d.hidden : d.hidden);
    const double out = l == d.layers - 1
                           ? d.out
                           : (d.arch == config::model_arch::gat ? d.heads * d.hidden : d.hidden);
    const double nd = double(blocks[l].num_dst), ns = double(blocks[l].num_src);
    switch (d.arch) {
      case config::model_arch::graphsage:
        f += 2 * 2 * nd * in * out;
        break;
      case config::model_arch::gcn:
      case config::model_arch::gat:
        f += 2 * ns * in * out;
        break;
      case config::model_arch::gin:
        f += 2 * nd * in * out + 2 * nd * out * out;
        break;
      default:
        break;
    }
  }
  for (std::size_t i = 0, hop = 0; i < d.ops.size(); ++i) {  // stack models: their sage ops
    const auto& op = d.ops[i];
    if (!config::is_message_passing(op.kind)) continue;
    const double nd = double(blocks[hop++].num_dst), in = i == 0 ? d.in : 256;
    const double ns = double(blocks[hop - 1].num_src), hc = double(op.heads) * op.out;
    if (op.kind == config::op_kind::sage) f += 2 * 2 * nd * in * op.out;
    if (op.kind == config::op_kind::gat) f += 2 * ns * in * hc;
    if (op.kind == config::op_kind::gatv2) f += 2 * (ns + nd) * in * hc;
    if (op.kind == config::op_kind::transformer) f += 2 * (2 * ns + 2 * nd) * in * hc;
  }
  return f;
}

// GraphSAGE 128-256-47 as a stack, plain (sage > relu > sage) or with BatchNorm
// and ELU between the layers and log_softmax after.
config::model_desc sage_stack(bool bn_elu) {
  const std::string plain =
      "[model]\narch = \"stack\"\nin = 128\nout = 47\n"
      "[[op]]\nkind = \"sage\"\nprefix = \"c1\"\nout = 256\n"
      "[[op]]\nkind = \"relu\"\n"
      "[[op]]\nkind = \"sage\"\nprefix = \"c2\"\nout = 47\n";
  const std::string with =
      "[model]\narch = \"stack\"\nin = 128\nout = 47\n"
      "[[op]]\nkind = \"sage\"\nprefix = \"c1\"\nout = 256\n"
      "[[op]]\nkind = \"batch_norm\"\nprefix = \"bn1\"\n"
      "[[op]]\nkind = \"elu\"\n"
      "[[op]]\nkind = \"sage\"\nprefix = \"c2\"\nout = 47\n"
      "[[op]]\nkind = \"log_softmax\"\n";
  return config::parse_model_desc(bn_elu ? with : plain, "model_bench").value();
}

// GAT's widths (128 -> 4 heads x 64 -> 47) with an attention kind: gat (the
// fixed architecture's layers as a stack), gatv2 or transformer.
config::model_desc attention_stack(const std::string& kind) {
  const std::string text = "[model]\narch = \"stack\"\nin = 128\nout = 47\n"
                           "[[op]]\nkind = \"" + kind + "\"\nprefix = \"c1\"\nout = 64\nheads = 4\n"
                           "[[op]]\nkind = \"elu\"\n"
                           "[[op]]\nkind = \"" + kind + "\"\nprefix = \"c2\"\nout = 47\n";
  return config::parse_model_desc(text, "model_bench").value();
}

// The plain stack as a link model: pairs scored by the dot product, or by an
// MLP on the pair's concatenation (94-64-1).
config::model_desc sage_link(bool mlp) {
  std::string text =
      "[model]\narch = \"stack\"\nin = 128\nout = 47\ntask = \"link\"\n";
  text += mlp ? "decoder = \"ops\"\n" : "decoder = \"dot\"\n";
  text += "[[op]]\nkind = \"sage\"\nprefix = \"c1\"\nout = 256\n"
          "[[op]]\nkind = \"relu\"\n"
          "[[op]]\nkind = \"sage\"\nprefix = \"c2\"\nout = 47\n";
  if (mlp)
    text += "[[decoder_op]]\nkind = \"cat\"\ninputs = [\"z_src\", \"z_dst\"]\n"
            "[[decoder_op]]\nkind = \"linear\"\nprefix = \"d1\"\nout = 64\n"
            "[[decoder_op]]\nkind = \"relu\"\n"
            "[[decoder_op]]\nkind = \"linear\"\nprefix = \"d2\"\nout = 1\n";
  return config::parse_model_desc(text, "model_bench").value();
}

// A typed graph shaped as MLPerf's IGBH (R-GAT's): papers (half the nodes),
// authors (35%) and institutes; papers cite 8 papers and have 3 authors, authors
// write 4 papers and belong to 1 institute. Edge types, in id order: (paper,
// cites, paper), (author, writes, paper), (paper, rev_writes, author),
// (institute, rev_affiliated, author). Rows list sources by edge type.
struct typed_graph {
  graph::csr_graph g;
  std::vector<std::int16_t> types;
  std::int64_t papers = 0, authors = 0;
  graph::csr_view view() const {
    auto v = g.view();
    v.edge_types = types;
    return v;
  }
};

typed_graph igbh_shaped(std::int64_t n, std::uint64_t seed) {
  typed_graph t;
  t.papers = n / 2, t.authors = n * 35 / 100;
  const std::int64_t institutes = n - t.papers - t.authors, a0 = t.papers, i0 = a0 + t.authors;
  std::mt19937_64 rng(seed);
  auto pick = [&](std::int64_t base, std::int64_t count) {
    return base + std::int64_t(rng() % std::uint64_t(count));
  };
  t.g.num_nodes = n;
  t.g.indptr.assign(1, 0);
  auto add = [&](int type, int k, std::int64_t base, std::int64_t count) {
    for (int e = 0; e < k; ++e) {
      t.g.indices32.push_back(std::int32_t(pick(base, count)));
      t.types.push_back(std::int16_t(type));
    }
  };
  for (std::int64_t v = 0; v < n; ++v) {
    if (v < a0) add(0, 8, 0, t.papers), add(1, 3, a0, t.authors);
    else if (v < i0) add(2, 4, 0, t.papers), add(3, 1, i0, institutes);
    t.g.indptr.push_back(std::int64_t(t.g.indices32.size()));
  }
  return t;
}

// R-GAT as GraphLearn-for-PyTorch writes it for IGBH: per edge type a
// GATConv(128 -> 4 heads x 32, add_self_loops=False), summed per node type,
// LeakyReLU, a second such layer, a Linear head on papers; every type 128 wide,
// institutes featureless: their rows come from a learnt table (nn.Embedding).
config::model_desc rgat_typed(std::int64_t institutes) {
  std::string t = "[model]\narch = \"stack\"\nin = 128\nout = 47\n";
  for (const char* n : {"paper", "author", "institute"})
    t += fmt::format("[[node_type]]\nname = \"{}\"\nin = 128\n", n);
  t += fmt::format("embedding = \"emb.institute.weight\"\nembedding_rows = {}\n", institutes);
  for (const char* e : {"paper cites paper", "author writes paper", "paper rev_writes author",
                        "institute rev_affiliated author"}) {
    char s[32], r[32], d[32];
    std::sscanf(e, "%31s %31s %31s", s, r, d);
    t += fmt::format("[[edge_type]]\nsrc = \"{}\"\nrel = \"{}\"\ndst = \"{}\"\n", s, r, d);
  }
  t += "[[output]]\nnode_type = \"paper\"\nvalue = \"head\"\n";
  auto gat = [](const std::string& name, const std::string& inputs, int rel, const std::string& p) {
    return fmt::format("[[op]]\nkind = \"gat\"\nname = \"{}\"\ninputs = [{}]\nprefix = \"{}\"\n"
                       "out = 32\nheads = 4\nadd_self_loops = false\nrelation = {}\n",
                       name, inputs, p, rel);
  };
  t += gat("c1r0", "\"x.paper\"", 0, "c1.r0") + gat("c1r1", "\"x.author\", \"x.paper\"", 1, "c1.r1") +
       gat("c1r2", "\"x.paper\", \"x.author\"", 2, "c1.r2") +
       gat("c1r3", "\"x.institute\", \"x.author\"", 3, "c1.r3");
  t += "[[op]]\nkind = \"add\"\nname = \"h1p\"\ninputs = [\"c1r0\", \"c1r1\"]\n"
       "[[op]]\nkind = \"add\"\nname = \"h1a\"\ninputs = [\"c1r2\", \"c1r3\"]\n"
       "[[op]]\nkind = \"leaky_relu\"\nname = \"l1p\"\ninputs = [\"h1p\"]\n"
       "[[op]]\nkind = \"leaky_relu\"\nname = \"l1a\"\ninputs = [\"h1a\"]\n";
  t += gat("c2r0", "\"l1p\"", 0, "c2.r0") + gat("c2r1", "\"l1a\", \"l1p\"", 1, "c2.r1");
  t += "[[op]]\nkind = \"add\"\nname = \"h2p\"\ninputs = [\"c2r0\", \"c2r1\"]\n"
       "[[op]]\nkind = \"linear\"\nname = \"head\"\ninputs = [\"h2p\"]\nprefix = \"lin\"\nout = 47\n";
  return config::parse_model_desc(t, "model_bench").value();
}

// The same layers on one node and one edge type (the typed graph's edges untyped).
config::model_desc rgat_untyped() {
  return config::parse_model_desc(
             "[model]\narch = \"stack\"\nin = 128\nout = 47\n"
             "[[op]]\nkind = \"gat\"\nprefix = \"c1\"\nout = 32\nheads = 4\nadd_self_loops = false\n"
             "[[op]]\nkind = \"leaky_relu\"\n"
             "[[op]]\nkind = \"gat\"\nprefix = \"c2\"\nout = 32\nheads = 4\nadd_self_loops = false\n"
             "[[op]]\nkind = \"linear\"\nprefix = \"lin\"\nout = 47\n",
             "model_bench")
      .value();
}

// Rows for R-GAT on the IGBH-shaped graph (fanouts [10, 5] per edge type) and
// the same layers untyped (fanouts [10, 5] per node), seeds drawn from papers.
int typed_rows(int reps, const std::string& tmp) {
  const auto tg = igbh_shaped(1 << 18, 3);
  std::mt19937_64 rng(9);
  std::vector<float> features(std::size_t(tg.g.num_nodes) * 128);
  for (auto& v : features) v = float(rng() % 1000) / 1000.0f;
  graph::inline_executor sampler;
  const std::vector<int> identity{0, 1, 2, 3};
  for (bool typed : {true, false}) {
    const auto d = typed ? rgat_typed(tg.g.num_nodes - tg.papers - tg.authors) : rgat_untyped();
    const std::string label = typed ? "rgat-typed" : "rgat-1type", dir = tmp + "/" + label;
    if (auto st = nn::init_model(d, 1, dir); !st) return fmt::print(stderr, "{}\n", st.to_string()), 1;
    nn::heap_allocator weights;
    auto m = nn::model::load(dir, weights);
    if (!m) return fmt::print(stderr, "{}\n", m.error().to_string()), 1;
    const auto view = typed ? tg.view() : tg.g.view();
    rng.seed(7);
    for (int batch : {1, 16, 64, 256}) {
      std::vector<double> times;
      double nodes = 0;
      for (int r = 0; r < reps; ++r) {
        std::vector<std::int64_t> seeds(static_cast<std::size_t>(batch));
        for (auto& s : seeds) s = std::int64_t(rng() % std::uint64_t(tg.papers));
        auto sub = sampler.sample(view, seeds, {{10, 5}, false, std::uint64_t(r)});
        if (!sub) return fmt::print(stderr, "{}\n", sub.error().to_string()), 1;
        std::vector<nn::block> blocks;
        for (int l = 0; l < 2; ++l) {
          auto b = sub->layer_block(l);
          blocks.push_back({b.num_dst, b.num_src, b.indptr, b.indices, b.edge_types});
        }
        const std::int64_t n = sub->hop_end.back();
        std::vector<float> x(std::size_t(n) * 128);
        for (std::int64_t i = 0; i < n; ++i)
          std::memcpy(x.data() + i * 128, features.data() + sub->nodes[i] * 128, 512);
        nn::heap_allocator alloc;
        const auto xt = nn::tensor::borrow(x.data(), {n, 128});
        auto t0 = std::chrono::steady_clock::now();
        std::vector<std::int16_t> row_types(static_cast<std::size_t>(n));
        std::vector<std::int64_t> row_ids(static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i) {
          const std::int64_t v = sub->nodes[i], i0 = tg.papers + tg.authors;
          row_types[std::size_t(i)] = std::int16_t(v >= i0 ? 2 : v >= tg.papers ? 1 : 0);
          row_ids[std::size_t(i)] = v >= i0 ? v - i0 : v >= tg.papers ? v - tg.papers : v;
        }
        auto y = typed ? m->forward_typed(alloc, blocks, xt, 0, identity, row_types, row_ids)
                       : m->forward(alloc, blocks, {}, xt);
        times.push_back(bench::seconds_since(t0));
        if (!y) return fmt::print(stderr, "{}\n", y.error().to_string()), 1;
        nodes += double(n);
      }
      double total = 0;
      for (double t : times) total += t;
      fmt::print("{:<10} {:>6} {:>8.0f} {:>10.3f} {:>10.3f} {:>12.0f} {:>10} {:>8}\n", label, batch,
                 nodes / reps, bench::percentile(times, 0.5) * 1e3,
                 bench::percentile(times, 0.99) * 1e3, batch * reps / total, "-", "-");
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  ensure_blas_kernels(argv);  // the kernels spindle itself runs
  const int reps = argc > 1 ? std::atoi(argv[1]) : 20;
  set_progress_enabled(false);
  nn::set_blas_threads(1);
  fmt::print("GEMM baseline (1 thread), GFLOP/s:   m x 256 x 256     OpenBLAS    Eigen\n");
  double peak = 0;
  for (int m : {64, 1024, 8192}) {
    double ob = openblas_gflops(m, 256, 256), ei = eigen_gflops(m, 256, 256);
    peak = std::max(peak, ob);
    fmt::print("{:>40} {:>12.1f} {:>8.1f}\n", m, ob, ei);
  }
  thread_pool pool(0, "bench");
  auto g = bench::rmat_graph(16, 16, pool);
  const std::string tmp = (std::filesystem::temp_directory_path() / "spindle-model-bench").string();
  std::mt19937_64 rng(5);
  std::vector<float> features(std::size_t(g.num_nodes) * 128);
  for (auto& v : features) v = float(rng() % 1000) / 1000.0f;
  graph::inline_executor sampler;
  fmt::print("\n{:<10} {:>6} {:>8} {:>10} {:>10} {:>12} {:>10} {:>8}\n", "model", "batch", "nodes",
             "p50 ms", "p99 ms", "seeds/s", "GFLOP/s", "vs gemm");
  std::vector<std::pair<std::string, config::model_desc>> gnns;
  for (auto arch : {config::model_arch::graphsage, config::model_arch::gcn, config::model_arch::gat,
                    config::model_arch::gin}) {
    config::model_desc d;
    d.arch = arch;
    d.in = 128, d.hidden = arch == config::model_arch::gat ? 64 : 256, d.heads = 4, d.out = 47;
    gnns.emplace_back(std::string(config::to_string(arch)), d);
  }
  gnns.emplace_back("sage-stack", sage_stack(false));
  gnns.emplace_back("sage-bn-elu", sage_stack(true));
  // The attention layers at GAT's widths, beside GAT as a stack (same run).
  for (const char* kind : {"gat", "gatv2", "transformer"})
    gnns.emplace_back(std::string(kind) + "-st", attention_stack(kind));
  // Link models: `batch` is pairs (2 x batch seeds sampled as one graph), seeds/s
  // is pairs/s; the time includes scoring the pairs.
  gnns.emplace_back("link-dot", sage_link(false));
  gnns.emplace_back("link-mlp", sage_link(true));
  // precision = "bf16" (the projections in bfloat16), beside the same stacks in fp32 above.
  if (nn::bf16_unsupported_reason().empty()) {
    gnns.emplace_back("sage-st-bf16", sage_stack(false));
    gnns.emplace_back("gat-st-bf16", attention_stack("gat"));
  } else {
    fmt::print("bf16 rows skipped: {}\n", nn::bf16_unsupported_reason());
  }
  for (const auto& [label, d] : gnns) {
    rng.seed(7);  // every model gets the same seeds (the stack rows compare with graphsage's)
    std::string dir = tmp + "/" + label;
    if (auto st = nn::init_model(d, 1, dir); !st)
      return fmt::print(stderr, "{}\n", st.to_string()), 1;
    nn::heap_allocator weights;
    auto m = nn::model::load(dir, weights);
    if (!m) return fmt::print(stderr, "{}\n", m.error().to_string()), 1;
    if (label.ends_with("-bf16"))
      if (auto st = m->set_precision("bf16"); !st) return fmt::print(stderr, "{}\n", st.to_string()), 1;
    for (int batch : {1, 16, 64, 256}) {
      std::vector<double> times;
      double flops = 0, nodes = 0;
      for (int r = 0; r < reps; ++r) {
        const int ends = d.scores_links() ? 2 : 1;
        std::vector<std::int64_t> seeds(static_cast<std::size_t>(batch * ends));
        for (auto& s : seeds) s = std::int64_t(rng() % std::uint64_t(g.num_nodes));
        auto sub = sampler.sample(g.view(), seeds, {{25, 10}, false, std::uint64_t(r)});
        std::vector<nn::block> blocks;
        for (int l = 0; l < 2; ++l) {
          auto b = sub->layer_block(l);
          blocks.push_back({b.num_dst, b.num_src, b.indptr, b.indices});
        }
        const std::int64_t n = sub->hop_end.back();
        std::vector<float> x(std::size_t(n) * 128);
        for (std::int64_t i = 0; i < n; ++i)
          std::memcpy(x.data() + i * 128, features.data() + sub->nodes[i] * 128, 512);
        auto degree = nn::gcn_degrees(sub->indptr, sub->indices, n);
        nn::heap_allocator alloc;
        auto t0 = std::chrono::steady_clock::now();
        auto y = m->forward(alloc, blocks, degree, nn::tensor::borrow(x.data(), {n, 128}));
        if (y && d.scores_links()) {
          std::vector<float> scores(static_cast<std::size_t>(batch));
          if (auto st = nn::score_pairs(*m, alloc, *y, sub->seed_local, scores.data()); !st)
            return fmt::print(stderr, "{}\n", st.to_string()), 1;
        }
        times.push_back(bench::seconds_since(t0));
        flops += gnn_flops(d, blocks);
        nodes += double(n);
      }
      double total = 0;
      for (double t : times) total += t;
      fmt::print("{:<10} {:>6} {:>8.0f} {:>10.3f} {:>10.3f} {:>12.0f} {:>10.2f} {:>7.0f}%\n",
                 label, batch, nodes / reps, bench::percentile(times, 0.5) * 1e3,
                 bench::percentile(times, 0.99) * 1e3, batch * reps / total, flops / total / 1e9,
                 100 * flops / total / 1e9 / peak);
    }
  }
  if (int rc = typed_rows(reps, tmp); rc != 0) return rc;
  // DLRM(A)
  config::model_desc d;
  d.arch = config::model_arch::dlrm;
  d.dense_in = 128, d.bottom = {64, 64}, d.top = {256, 64, 1}, d.embedding_dim = 64;
  d.table_rows.assign(8, 100000);
  std::string dir = tmp + "/dlrm";
  if (auto st = nn::init_model(d, 1, dir); !st)
    return fmt::print(stderr, "{}\n", st.to_string()), 1;
  nn::heap_allocator weights;
  auto m = nn::model::load(dir, weights);
  for (int batch : {1, 64, 256, 1024}) {
    std::vector<float> dense(std::size_t(batch) * 128, 0.1f);
    std::vector<nn::sparse_input> sparse(8);
    for (auto& s : sparse) {
      s.offsets.push_back(0);
      for (int b = 0; b < batch; ++b) {
        for (int k = 0; k < 80; ++k) s.indices.push_back(std::int64_t(rng() % 100000));
        s.offsets.push_back(std::int64_t(s.indices.size()));
      }
    }
    std::vector<double> times;
    for (int r = 0; r < reps; ++r) {
      nn::heap_allocator alloc;
      auto t0 = std::chrono::steady_clock::now();
      auto y = m->forward_dlrm(alloc, nn::tensor::borrow(dense.data(), {batch, 128}), sparse);
      times.push_back(bench::seconds_since(t0));
    }
    double total = 0;
    for (double t : times) total += t;
    const double flops = 2.0 * batch * (128 * 64 + 64 * 64 + 100 * 256 + 256 * 64 + 64);
    fmt::print("{:<10} {:>6} {:>8} {:>10.3f} {:>10.3f} {:>12.0f} {:>10.2f} {:>7.0f}%\n", "dlrm(A)",
               batch, "-", bench::percentile(times, 0.5) * 1e3,
               bench::percentile(times, 0.99) * 1e3, batch * reps / total,
               flops * reps / total / 1e9, 100 * flops * reps / total / 1e9 / peak);
  }
  return 0;
}
