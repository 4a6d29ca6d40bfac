// `make gpu-check`'s program: on a machine with a GPU, runs each CUDA kernel
// and the host path on the same inputs and compares them (sampler: the same
// neighbours for the same seed, hop and node; SpMM and activations: within
// see `comparison`). Without a GPU it says why and exits 0: nothing is claimed.
#include "tests/gpu/gpu_check.hpp"

namespace spindle::gpu {
namespace {

// The R-MAT graph every check samples or aggregates over (2^14 nodes).
graph::csr_graph rmat14() {
  thread_pool pool(2);
  graph::rmat_options o;
  o.scale = 14;
  graph::build_options b;
  b.relabel = graph::relabel_mode::never;
  b.num_nodes = 1 << 14;
  return graph::build_csr(graph::generate_rmat(o, pool).value(), b, &pool).value().csr;
}

status check_sampler(std::string& result) {
  const auto g = rmat14();
  const auto v = g.view();
  if (v.wide()) return make_error(errc::unsupported, "64-bit neighbour ids");
  std::vector<std::int64_t> seeds(4096);
  for (std::size_t i = 0; i < seeds.size(); ++i) seeds[i] = std::int64_t(i * 3);
  std::int64_t rows = 0, mismatched = 0;
  for (int fanout : {10, 25}) {
    graph::inline_executor ex;
    auto host = ex.sample(v, seeds, {{fanout}, false, 99});
    if (!host) return host.error();
    std::vector<std::int64_t> indptr(v.indptr.begin(), v.indptr.end());
    std::vector<std::int32_t> indices(v.indices32.begin(), v.indices32.end());
    SPINDLE_ASSIGN_OR_RETURN(auto d_indptr, device_array<std::int64_t>::of(indptr));
    SPINDLE_ASSIGN_OR_RETURN(auto d_indices, device_array<std::int32_t>::of(indices));
    SPINDLE_ASSIGN_OR_RETURN(auto d_seeds, device_array<std::int64_t>::of(seeds));
    SPINDLE_ASSIGN_OR_RETURN(auto d_out, device_array<std::int64_t>::of(
                                             std::vector<std::int64_t>(seeds.size() * fanout)));
    SPINDLE_ASSIGN_OR_RETURN(
        auto d_counts, device_array<std::int64_t>::of(std::vector<std::int64_t>(seeds.size())));
    SPINDLE_TRY(sample_hop_async({d_indptr.p, d_indices.p, v.num_nodes}, d_seeds.p,
                                 std::int64_t(seeds.size()), fanout, 99, 1, d_out.p, d_counts.p,
                                 nullptr));
    SPINDLE_TRY(synchronize(nullptr));
    const auto out = d_out.to_host(), counts = d_counts.to_host();
    for (std::size_t i = 0; i < seeds.size(); ++i, ++rows) {
      const std::int64_t r = host->seed_local[i], n = host->indptr[r + 1] - host->indptr[r];
      bool same = counts[i] == n;
      for (std::int64_t k = 0; same && k < n; ++k)
        same = out[i * std::size_t(fanout) + std::size_t(k)] ==
               host->nodes[host->indices[host->indptr[r] + k]];
      mismatched += !same;
    }
  }
  result = fmt::format("{} rows, {} differ", rows, mismatched);
  return mismatched ? make_error(errc::internal, "{}", result) : status::ok();
}

// The whole executor: 2 hops [25, 10] on the device vs the inline executor.
status check_executor(std::string& result) {
  const auto g = rmat14();
  SPINDLE_ASSIGN_OR_RETURN(auto ex, serving::cuda_sampling_executor::create(g.view()));
  std::vector<std::int64_t> seeds(1024);
  for (std::size_t i = 0; i < seeds.size(); ++i) seeds[i] = std::int64_t(i * 11 % (1 << 14));
  const graph::sample_options opts{{25, 10}, false, 7};
  SPINDLE_ASSIGN_OR_RETURN(auto dev, ex->sample(g.view(), seeds, opts));
  graph::inline_executor host_ex;
  SPINDLE_ASSIGN_OR_RETURN(auto host, host_ex.sample(g.view(), seeds, opts));
  const bool same = dev.nodes == host.nodes && dev.indptr == host.indptr &&
                    dev.indices == host.indices && dev.hop_end == host.hop_end;
  result = fmt::format("{} seeds, {} sampled edges", seeds.size(), host.num_edges());
  return same ? status::ok() : make_error(errc::internal, "subgraphs differ ({})", result);
}

// The tiered gather: a quarter of the rows on the device, the rest over UVA.
status check_gather(std::string& result) {
  const auto g = rmat14();
  const std::int64_t n = 1 << 14, dim = 64;
  std::vector<float> table(std::size_t(n * dim));
  for (std::size_t i = 0; i < table.size(); ++i) table[i] = float(i % 9973) * 0.25f;
  std::vector<double> fap(static_cast<std::size_t>(n));
  for (std::int64_t v = 0; v < n; ++v)
    fap[std::size_t(v)] = double(g.view().indptr[v + 1] - g.view().indptr[v]);
  const auto t = features::plan_feature_tiers(fap, n, dim, std::size_t(n / 4 * dim) * 4);
  std::vector<float> device_table;
  for (auto v : t.device_nodes)
    device_table.insert(device_table.end(), table.begin() + v * dim, table.begin() + (v + 1) * dim);
  std::vector<std::int64_t> ids(4096);
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = std::int64_t(i * 7 % std::size_t(n));
  SPINDLE_ASSIGN_OR_RETURN(auto d_rows, device_array<float>::of(device_table));
  SPINDLE_ASSIGN_OR_RETURN(auto d_tier, device_array<std::uint8_t>::of(t.tier));
  SPINDLE_ASSIGN_OR_RETURN(auto d_row, device_array<std::int64_t>::of(t.row));
  SPINDLE_ASSIGN_OR_RETURN(auto d_ids, device_array<std::int64_t>::of(ids));
  SPINDLE_ASSIGN_OR_RETURN(auto d_out,
                           device_array<float>::of(std::vector<float>(ids.size() * dim)));
  SPINDLE_ASSIGN_OR_RETURN(const void* host_rows, map_host(table.data(), table.size() * 4));
  auto st = gather_async({d_tier.p, d_row.p}, d_rows.p, static_cast<const float*>(host_rows), dim,
                         d_ids.p, std::int64_t(ids.size()), d_out.p, nullptr);
  if (st) st = synchronize(nullptr);
  unmap_host(table.data());
  SPINDLE_TRY(st);
  const auto got = d_out.to_host();
  std::vector<float> want(ids.size() * dim);
  serving::gather_rows(table, dim, ids, want.data());
  result = fmt::format("{} rows of {} floats, {:.0f}% of FAP mass on the device", ids.size(), dim,
                       100 * t.device_fap_share);
  return got == want ? status::ok() : make_error(errc::internal, "bytes differ ({})", result);
}

// The place kernel (a fetch's rows to their batch positions) vs place_rows on
// the host: 3,000 rows of 48 floats to a shuffled set of positions.
status check_place(std::string& result) {
  const std::int64_t n = 3000, dim = 48;
  std::vector<float> src(std::size_t(n * dim));
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = float(i) * 0.5f;
  std::vector<std::int64_t> to(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) to[std::size_t(i)] = (i * 7919) % n;  // a permutation
  std::vector<float> want(src.size(), 0.0f);
  place_rows(src.data(), to.data(), n, dim, want.data());
  SPINDLE_ASSIGN_OR_RETURN(auto d_src, device_array<float>::of(src));
  SPINDLE_ASSIGN_OR_RETURN(auto d_to, device_array<std::int64_t>::of(to));
  SPINDLE_ASSIGN_OR_RETURN(auto d_dst, device_array<float>::of(std::vector<float>(src.size())));
  SPINDLE_TRY(place_rows_async(d_src.p, d_to.p, n, dim, d_dst.p, nullptr));
  SPINDLE_TRY(synchronize(nullptr));
  result = fmt::format("{} rows of {} floats", n, dim);
  return d_dst.to_host() == want ? status::ok()
                                 : make_error(errc::internal, "bytes differ ({})", result);
}

// A GNN described by `d` (2 hops, 32 features in) over a sampled 2-hop batch: the
// device layers (serving::device_model, what cuda_executor runs) vs nn::model::forward.
status check_desc(const config::model_desc& d, const std::string& tag, std::string& result) {
  const auto g = rmat14();
  std::vector<std::int64_t> seeds(256);
  for (std::size_t i = 0; i < seeds.size(); ++i) seeds[i] = std::int64_t(i * 13);
  graph::inline_executor ex;
  SPINDLE_ASSIGN_OR_RETURN(auto sub, ex.sample(g.view(), seeds, {{10, 5}, false, 3}));
  const std::string dir = "/tmp/spindle-gpu-check-" + tag;
  SPINDLE_TRY(nn::init_model(d, 1, dir));
  nn::heap_allocator alloc;
  SPINDLE_ASSIGN_OR_RETURN(auto m, nn::model::load(dir, alloc));
  std::vector<nn::block> blocks;
  for (int l = 0; l < 2; ++l) {
    const auto bv = sub.layer_block(l);
    blocks.push_back({bv.num_dst, bv.num_src, bv.indptr, bv.indices});
  }
  auto degree = nn::gcn_degrees(sub.indptr, sub.indices, sub.hop_end.back());
  if (d.arch == config::model_arch::stack)  // a stack's GCN reads neighbour counts
    for (auto& v : degree) v -= 1.0f;
  std::vector<float> x(std::size_t(blocks[0].num_src * d.in));
  std::mt19937 rng(1);
  std::normal_distribution<float> n(0, 1);
  for (auto& f : x) f = n(rng);
  const auto xt = nn::tensor::borrow(x.data(), {blocks[0].num_src, d.in});
  SPINDLE_ASSIGN_OR_RETURN(auto want, m.forward(alloc, blocks, degree, xt));
  SPINDLE_ASSIGN_OR_RETURN(auto dm, serving::device_model::create(m));
  SPINDLE_ASSIGN_OR_RETURN(auto arena, device_arena::create(std::size_t(64) << 20));
  SPINDLE_ASSIGN_OR_RETURN(void* blas, blas_create());
  auto got = dm->forward(*arena, blas, alloc, blocks, degree, xt);
  blas_destroy(blas);
  if (!got) return got.error();
  comparison c;
  for (std::int64_t i = 0; i < want.numel(); ++i) c.add(got->data()[i], want.data()[i]);
  return c.check(fmt::format("{} x {} outputs", want.rows(), want.cols()), result);
}

status check_layers(config::model_arch arch, std::string& result) {
  config::model_desc d;
  d.arch = arch;
  d.in = 32, d.hidden = 64, d.out = 16, d.layers = 2;
  return check_desc(d, std::string(config::to_string(arch)), result);
}

// Stack models (what spindle_client.export writes) covering every op kind with a
// device path: SAGEConv max + project + normalize, BatchNorm, ELU, GCNConv with
// the graph-style options, LayerNorm, LeakyReLU, log_softmax; and GATConv with
// concat=False, PReLU, GIN's aggregation and MLP, JumpingKnowledge cat, a residual
// add, GELU, sum and min aggregation.
}  // namespace

expected<config::model_desc> stack_desc(int which) {
  const std::string a =
      "[model]\narch = \"stack\"\nin = 32\nout = 16\n"
      "[[op]]\nkind = \"sage\"\nprefix = \"c1\"\nout = 48\naggr = \"max\"\nproject = true\n"
      "normalize = true\n"
      "[[op]]\nkind = \"batch_norm\"\nprefix = \"bn\"\n"
      "[[op]]\nkind = \"elu\"\nalpha = 0.7\n"
      "[[op]]\nkind = \"gcn\"\nprefix = \"c2\"\nout = 24\nimproved = true\n"
      "[[op]]\nkind = \"layer_norm\"\nprefix = \"ln\"\n"
      "[[op]]\nkind = \"leaky_relu\"\nnegative_slope = 0.1\n"
      "[[op]]\nkind = \"linear\"\nprefix = \"head\"\nout = 16\n"
      "[[op]]\nkind = \"log_softmax\"\n";
  const std::string b =
      "[model]\narch = \"stack\"\nin = 32\nout = 16\n"
      "[[op]]\nkind = \"linear\"\nname = \"h0\"\nprefix = \"lin\"\nout = 32\n"
      "[[op]]\nkind = \"gat\"\nname = \"g\"\nprefix = \"c1\"\nout = 32\nheads = 3\n"
      "concat = false\n"
      "[[op]]\nkind = \"prelu\"\nname = \"p\"\nprefix = \"act\"\nchannels = 32\n"
      "[[op]]\nkind = \"add\"\nname = \"r\"\ninputs = [\"p\", \"h0\"]\n"
      "[[op]]\nkind = \"gin\"\nname = \"z\"\nprefix = \"c2\"\neps = 0.25\n"
      "[[op]]\nkind = \"linear\"\nprefix = \"c2.nn.0\"\nout = 32\n"
      "[[op]]\nkind = \"gelu\"\nname = \"q\"\n"
      "[[op]]\nkind = \"cat\"\nname = \"jk\"\ninputs = [\"r\", \"q\"]\n"
      "[[op]]\nkind = \"tanh\"\n"
      "[[op]]\nkind = \"linear\"\nprefix = \"head\"\nout = 16\n";
  // The attention and weightless hops: GATv2 (self-loops, concat), TransformerConv
  // (beta, mean heads); then gcn_propagate and ResGatedGraphConv.
  const std::string c =
      "[model]\narch = \"stack\"\nin = 32\nout = 16\n"
      "[[op]]\nkind = \"gatv2\"\nprefix = \"c1\"\nout = 12\nheads = 2\n"
      "[[op]]\nkind = \"elu\"\n"
      "[[op]]\nkind = \"transformer\"\nprefix = \"c2\"\nout = 16\nheads = 3\nconcat = false\n"
      "beta = true\n";
  const std::string e =
      "[model]\narch = \"stack\"\nin = 32\nout = 16\n"
      "[[op]]\nkind = \"gcn_propagate\"\n"
      "[[op]]\nkind = \"res_gated\"\nprefix = \"c2\"\nout = 20\n"
      "[[op]]\nkind = \"linear\"\nprefix = \"head\"\nout = 16\n";
  const std::string* texts[] = {&a, &b, &c, &e};
  return config::parse_model_desc(*texts[which], "gpu_check");
}

namespace {

status check_stack(int which, std::string& result) {
  SPINDLE_ASSIGN_OR_RETURN(auto d, stack_desc(which));
  return check_desc(d, fmt::format("stack{}", which), result);
}

// Without a GPU: the stack descriptions parse, initialise and run on the host.
status check_stack_host(int which, std::string& result) {
  SPINDLE_ASSIGN_OR_RETURN(auto d, stack_desc(which));
  const std::string dir = fmt::format("/tmp/spindle-gpu-check-host-stack{}", which);
  SPINDLE_TRY(nn::init_model(d, 1, dir));
  nn::heap_allocator alloc;
  SPINDLE_ASSIGN_OR_RETURN(auto m, nn::model::load(dir, alloc));
  const auto g = rmat14();
  graph::inline_executor ex;
  std::vector<std::int64_t> seeds{1, 2, 3};
  SPINDLE_ASSIGN_OR_RETURN(auto sub, ex.sample(g.view(), seeds, {{10, 5}, false, 3}));
  std::vector<nn::block> blocks;
  for (int l = 0; l < 2; ++l) {
    const auto bv = sub.layer_block(l);
    blocks.push_back({bv.num_dst, bv.num_src, bv.indptr, bv.indices});
  }
  auto degree = nn::gcn_degrees(sub.indptr, sub.indices, sub.hop_end.back());
  std::vector<float> x(std::size_t(blocks[0].num_src * 32), 0.5f);
  SPINDLE_ASSIGN_OR_RETURN(
      auto y, m.forward(alloc, blocks, degree, nn::tensor::borrow(x.data(), {blocks[0].num_src, 32})));
  result = fmt::format("stack {}: {} ({} x {})", which, config::summary(m.desc()), y.rows(), y.cols());
  return y.rows() == 3 && y.cols() == 16 ? status::ok() : make_error(errc::internal, "{}", result);
}

// HPS's L1 on the device vs the host cache: 500 keys replaced into 4,096 slots
// (no set overflows, so no eviction order to differ), half updated, then the
// same hits and the same vectors for 1,000 queried keys.
status check_cache(std::string& result) {
  const hps::cache_options o{4096, 8, 2};
  SPINDLE_ASSIGN_OR_RETURN(auto dev, hps::make_l1_cache(o, true));
  SPINDLE_ASSIGN_OR_RETURN(auto host, hps::make_l1_cache(o, false));
  std::vector<hps::cache_key> keys(500), half(250), asked(1000);
  for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = i * 7919 + 3;
  for (std::size_t i = 0; i < half.size(); ++i) half[i] = keys[2 * i];
  for (std::size_t i = 0; i < asked.size(); ++i) asked[i] = i * 7919 + 3;  // half absent
  std::vector<float> v(keys.size() * 8), u(half.size() * 8);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = float(i) * 0.5f;
  for (std::size_t i = 0; i < u.size(); ++i) u[i] = -float(i);
  std::uint64_t hits = 0;
  for (auto* c : {dev.get(), host.get()}) {
    SPINDLE_TRY(c->replace(keys, v));
    SPINDLE_ASSIGN_OR_RETURN(auto n, c->update(half, u));
    if (n != half.size())
      return make_error(errc::internal, "{} cache updated {} of {}", c->where(), n, half.size());
  }
  std::vector<float> dv(asked.size() * 8), hv(asked.size() * 8);
  hps::cache_misses dm, hm;
  SPINDLE_TRY(dev->query(asked, dv, dm));
  SPINDLE_TRY(host->query(asked, hv, hm));
  if (dm.positions != hm.positions) return make_error(errc::internal, "different misses");
  std::size_t m = 0;
  for (std::size_t i = 0; i < asked.size(); ++i) {
    if (m < hm.positions.size() && hm.positions[m] == i) {
      ++m;
      continue;
    }
    ++hits;
    for (int c = 0; c < 8; ++c)
      if (dv[i * 8 + c] != hv[i * 8 + c])
        return make_error(errc::internal, "key {} differs", asked[i]);
  }
  result = fmt::format("{} hits, {} misses, vectors equal", hits, hm.keys.size());
  return status::ok();
}

status check_spmm_and_activation(std::string& result) {
  std::mt19937 rng(5);
  const std::int64_t dst = 2048, src = 8192, width = 128;
  std::vector<std::int64_t> indptr{0};
  std::vector<std::int32_t> indices;
  for (std::int64_t r = 0; r < dst; ++r) {
    for (int e = 0, d = int(rng() % 26); e < d; ++e) indices.push_back(std::int32_t(rng() % src));
    indptr.push_back(std::int64_t(indices.size()));
  }
  std::vector<float> x(std::size_t(src * width));
  std::normal_distribution<float> n(0, 1);
  for (auto& f : x) f = n(rng);
  nn::heap_allocator alloc;
  auto host = nn::propagate(alloc, {dst, src, indptr, indices},
                            nn::tensor::borrow(x.data(), {src, width}), nn::reduce_op::mean);
  if (!host) return host.error();
  nn::relu_(*host);
  SPINDLE_ASSIGN_OR_RETURN(auto d_indptr, device_array<std::int64_t>::of(indptr));
  SPINDLE_ASSIGN_OR_RETURN(auto d_indices, device_array<std::int32_t>::of(indices));
  SPINDLE_ASSIGN_OR_RETURN(auto d_x, device_array<float>::of(x));
  SPINDLE_ASSIGN_OR_RETURN(auto d_out, device_array<float>::of(std::vector<float>(dst * width)));
  SPINDLE_TRY(
      spmm_async(d_indptr.p, d_indices.p, d_x.p, dst, width, spmm_reduce::mean, d_out.p, nullptr));
  SPINDLE_TRY(activation_async(d_out.p, dst * width, activation::relu, 0, nullptr));
  SPINDLE_TRY(synchronize(nullptr));
  const auto got = d_out.to_host();
  comparison c;
  for (std::size_t i = 0; i < got.size(); ++i) c.add(got[i], host->data()[i]);
  return c.check(fmt::format("{} x {} elements", dst, width), result);
}

}  // namespace
}  // namespace spindle::gpu

int main(int argc, char** argv) {
  using namespace spindle::gpu;
  if (argc > 1 && std::string_view(argv[1]) == "--harness") {  // the host on both sides
    served_device = device_kind::host;
    int failed = 0;
    for (auto check :
         {+[](std::string& r) { return check_served(spindle::config::model_arch::gin, r); },
          +[](std::string& r) { return check_gnnsched(r); },
         +[](std::string& r) { return check_stack_host(0, r); },
         +[](std::string& r) { return check_stack_host(1, r); },
         +[](std::string& r) { return check_served_stack(0, r); },
         +[](std::string& r) { return check_served_stack(1, r); },
         +[](std::string& r) { return check_stack_host(2, r); },
         +[](std::string& r) { return check_stack_host(3, r); },
         +[](std::string& r) { return check_served_stack(2, r); },
         +[](std::string& r) { return check_served_stack(3, r); },
         +[](std::string& r) { return check_gnnsched_stack(r); }}) {
      std::string result;
      const auto st = check(result);
      failed += !st.is_ok();
      std::printf("harness (host vs host): %s\n",
                  st.is_ok() ? result.c_str() : st.to_string().c_str());
    }
    return failed ? 1 : 0;
  }
  const auto& report = query_devices();
  std::printf("CUDA backend built: %s; %s\n", report.cuda_built ? "yes" : "no",
              report.cuda_status.c_str());
  if (report.devices.empty() || report.devices.front().kind != device_kind::cuda) {
    std::printf("no GPU here: no kernel was run on a device (nothing to compare)\n");
    return 0;
  }
  std::printf("device 0: %s\n| kernel | compared with | result |\n|---|---|---|\n",
              report.devices.front().name.c_str());
  int failed = 0;
  auto row = [&](const char* kernel, const char* host, const auto& check) {
    std::string result;
    const auto st = check(result);
    failed += !st.is_ok();
    std::printf("| %s | %s | %s |\n", kernel, host,
                st.is_ok() ? ("same: " + result).c_str() : ("FAILED: " + st.message()).c_str());
  };
  row("sample_hop (1 block per frontier row)", "graph::inline_executor", check_sampler);
  row("cuda_sampling_executor, 2 hops", "graph::inline_executor", check_executor);
  row("gather over device + UVA host tiers", "serving::gather_rows", check_gather);
  row("place rows (a peer fetch's rows to batch positions)", "gpu::place_rows", check_place);
  using spindle::config::model_arch;
  const std::pair<const char*, model_arch> layers[] = {
      {"GraphSAGE layers (spmm + cuBLAS + bias/ReLU)", model_arch::graphsage},
      {"GCN layers (cuBLAS + normalized aggregation)", model_arch::gcn},
      {"GIN layers (sum + (1+eps)x, two cuBLAS GEMMs)", model_arch::gin},
      {"GAT layers (cuBLAS + per-head scores + softmax aggregation)", model_arch::gat}};
  for (const auto& [kernel, arch] : layers)
    row(kernel, "nn::model::forward", [arch](std::string& r) { return check_layers(arch, r); });
  row("stack: SAGE max/project/normalize, BatchNorm, ELU, GCN, LayerNorm, head", "nn::model::forward",
      [](std::string& r) { return check_stack(0, r); });
  row("stack: GAT concat=False, PReLU, residual, GIN, GELU, JK cat, tanh", "nn::model::forward",
      [](std::string& r) { return check_stack(1, r); });
  row("stack: GATv2 concat, ELU, TransformerConv beta mean heads", "nn::model::forward",
      [](std::string& r) { return check_stack(2, r); });
  row("stack: GCN propagation, ResGatedGraphConv, head", "nn::model::forward",
      [](std::string& r) { return check_stack(3, r); });
  const std::pair<const char*, model_arch> served_models[] = {
      {"cuda_executor: served GraphSAGE batches", model_arch::graphsage},
      {"cuda_executor: served GIN batches", model_arch::gin},
      {"cuda_executor: served GAT batches", model_arch::gat}};
  for (const auto& [kernel, arch] : served_models)
    row(kernel, "host gnn_pipeline", [arch](std::string& r) { return check_served(arch, r); });
  row("GNNSched pool in device memory, a stream per task", "host gnn_pipeline", check_gnnsched);
  row("cuda_executor on a cluster rank: device tier filled through a source", "host gnn_pipeline",
      check_rank_served);
  row("cuda_executor: served stack model 0 (graph-degree GCN, BatchNorm, ...)", "host gnn_pipeline",
      [](std::string& r) { return check_served_stack(0, r); });
  row("cuda_executor: served stack model 1 (GAT mean heads, GIN, JK cat, ...)", "host gnn_pipeline",
      [](std::string& r) { return check_served_stack(1, r); });
  row("cuda_executor: served stack model 2 (GATv2, TransformerConv)", "host gnn_pipeline",
      [](std::string& r) { return check_served_stack(2, r); });
  row("cuda_executor: served stack model 3 (propagation, ResGatedGraphConv)", "host gnn_pipeline",
      [](std::string& r) { return check_served_stack(3, r); });
  row("GNNSched device pool: stack model 0", "host gnn_pipeline", check_gnnsched_stack);
  row("HPS slab cache (query, replace, update)", "hps::embedding_cache", check_cache);
  row("spmm mean + relu", "nn::propagate + relu_", check_spmm_and_activation);
  return failed ? 1 : 0;
}
