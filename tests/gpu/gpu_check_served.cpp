// `make gpu-check`'s served-path checks: the served path (device executors, the
// GNNSched device pool) on an R-MAT 2^14 dataset against the host gnn_pipeline,
// for the fixed architectures and the stack models.
#include "tests/gpu/gpu_check.hpp"

namespace spindle::gpu {

device_kind served_device = device_kind::cuda;

// The served path's inputs: an R-MAT 2^14 dataset with 32 features and a
// 2-layer 32-64-16 model of `arch` (fanouts [25, 10]).
struct served_inputs {
  graph::dataset ds;
  nn::heap_allocator weights;
  std::optional<nn::model> model;
  thread_pool pool{2, "gpu-check"};
  serving::psgs_router router{serving::psgs_calibration{}, serving::routing_policy::fixed};
  explicit served_inputs(graph::dataset d) : ds(std::move(d)) {}
};

expected<std::unique_ptr<served_inputs>> served_desc(const config::model_desc& d,
                                                     const std::string& tag) {
  const std::string dir = "/tmp/spindle-gpu-check-dataset";
  if (!graph::dataset::open(dir)) {
    thread_pool pool(2);
    graph::generate_options o;
    o.force = true;
    o.rmat.scale = 14;
    o.feature_dim = 32;
    SPINDLE_TRY(graph::generate_dataset(o, dir, pool));
  }
  SPINDLE_ASSIGN_OR_RETURN(auto ds, graph::dataset::open(dir));
  auto in = std::make_unique<served_inputs>(std::move(ds));
  const std::string mdir = "/tmp/spindle-gpu-check-served-" + tag;
  SPINDLE_TRY(nn::init_model(d, 1, mdir));
  SPINDLE_ASSIGN_OR_RETURN(auto m, nn::model::load(mdir, in->weights));
  in->model.emplace(std::move(m));
  return in;
}

expected<std::unique_ptr<served_inputs>> served(config::model_arch arch) {
  config::model_desc d;
  d.arch = arch;
  d.in = 32, d.hidden = 64, d.out = 16, d.layers = 2;
  return served_desc(d, std::string(config::to_string(arch)));
}

std::vector<serving::gnn_request> served_batch(int b) {
  std::vector<serving::gnn_request> out(64);
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i].seeds = {std::int64_t((b * 64 + int(i)) * 37 % (1 << 14))};
  return out;
}

// `got` against `want`, answer by answer, into `c`.
void compare_results(const serving::batch_result& got, const serving::batch_result& want,
                     comparison& c) {
  for (std::size_t r = 0; r < want.outputs.size(); ++r) {
    if (!want.errors[r]) {
      if (c.error.empty()) c.error = "host: " + want.errors[r].to_string();
      continue;
    }
    if (!got.errors[r]) {
      if (c.error.empty()) c.error = got.errors[r].to_string();
      continue;
    }
    if (got.outputs[r].size() != want.outputs[r].size()) {
      if (c.error.empty())
        c.error = fmt::format("answer {} has {} values, the host's {}", r, got.outputs[r].size(),
                              want.outputs[r].size());
      continue;
    }
    for (std::size_t k = 0; k < want.outputs[r].size(); ++k)
      c.add(got.outputs[r][k], want.outputs[r][k]);
  }
}

// Served batches through serving::cuda_executor as PSGS's large executor (device
// sampling, gather over a device tier of 1 MiB plus UVA, device layers) vs the
// host pipeline: the same 8 batches of 64, the same joint samples.
status check_served_inputs(std::unique_ptr<served_inputs> in, std::string& result) {
  SPINDLE_ASSIGN_OR_RETURN(auto ex, serving::make_large_executor(in->ds, served_device, 1 << 20));
  serving::gnn_pipeline dev(in->ds, *in->model, in->router, in->pool, {}, ex);
  serving::gnn_pipeline host(in->ds, *in->model, in->router, in->pool);
  comparison c;
  for (int b = 0; b < 8; ++b) {
    const auto batch = served_batch(b);
    compare_results(dev.run(batch, serving::psgs_router::choice::large),
                    host.run(batch, serving::psgs_router::choice::large), c);
  }
  return c.check("8 batches of 64", result);
}

status check_served(config::model_arch arch, std::string& result) {
  SPINDLE_ASSIGN_OR_RETURN(auto in, served(arch));
  return check_served_inputs(std::move(in), result);
}

// GNNSched with its pool in device memory: 8 prepared batches submitted at
// once, grouped, each task of a group on its own stream, vs the host passes.
status check_gnnsched_inputs(std::unique_ptr<served_inputs> in, std::string& result) {
  SPINDLE_ASSIGN_OR_RETURN(auto ex, serving::make_large_executor(in->ds, served_device, 1 << 20));
  serving::gnn_pipeline dev(in->ds, *in->model, in->router, in->pool, {}, ex);
  serving::gnn_pipeline host(in->ds, *in->model, in->router, in->pool);
  thread_pool workers(4, "gpu-check-w");
  SPINDLE_ASSIGN_OR_RETURN(
      auto scheduler, colocation::device_scheduler::create(std::size_t(256) << 20, workers,
                                                      colocation::grouping_policy::bqt, served_device));
  std::vector<std::vector<serving::gnn_request>> batches;
  std::vector<std::unique_ptr<serving::prepared_batch>> on_dev, on_host;
  for (int b = 0; b < 8; ++b) {
    batches.push_back(served_batch(b));
    on_dev.push_back(dev.prepare(batches.back()));
    on_host.push_back(host.prepare(batches.back()));
  }
  std::vector<std::future<status>> done;
  for (int b = 0; b < 8; ++b) {
    auto p = std::make_shared<std::promise<status>>();
    done.push_back(p->get_future());
    scheduler->submit(
        colocation::task_bytes(dev, *on_dev[b]), 0.01,
        [&, b](pool_slot slot) {
          dev.compute(*on_dev[b], batches[b], slot);
          return status::ok();
        },
        [p](status st) { p->set_value(std::move(st)); });
  }
  comparison c;
  for (int b = 0; b < 8; ++b) {
    SPINDLE_TRY(done[b].get());
    std::vector<std::byte> buffer(colocation::task_bytes(host, *on_host[b]));
    host.compute(*on_host[b], batches[b], {buffer, nullptr});
    compare_results(on_dev[b]->result, on_host[b]->result, c);
  }
  const auto st = scheduler->stats();
  return c.check(fmt::format("8 tasks in {} groups (largest {})", st.groups, st.largest_group),
                 result);
}

status check_gnnsched(std::string& result) {
  SPINDLE_ASSIGN_OR_RETURN(auto in, served(config::model_arch::graphsage));
  return check_gnnsched_inputs(std::move(in), result);
}

// A stack model served through the pipeline (device sampling, tiered gather,
// device stack ops; GCN by the graph's degrees) and in GNNSched's device pool.
status check_served_stack(int which, std::string& result) {
  SPINDLE_ASSIGN_OR_RETURN(auto d, stack_desc(which));
  SPINDLE_ASSIGN_OR_RETURN(auto in, served_desc(d, fmt::format("stack{}", which)));
  return check_served_inputs(std::move(in), result);
}

status check_gnnsched_stack(std::string& result) {
  SPINDLE_ASSIGN_OR_RETURN(auto d, stack_desc(0));
  SPINDLE_ASSIGN_OR_RETURN(auto in, served_desc(d, "stack0"));
  return check_gnnsched_inputs(std::move(in), result);
}

// A cluster rank's GPU (node --device cuda): a device tier of the hottest 1,024
// rows filled through a feature source, every other row read through it per
// batch and placed beside them, vs the host pipeline reading every row through
// the same source: the same 8 batches of 64.
status check_rank_served(std::string& result) {
  SPINDLE_ASSIGN_OR_RETURN(auto in, served(config::model_arch::graphsage));
  const graph::dataset& ds = in->ds;
  const std::int64_t dim = ds.feature_dim();
  serving::feature_source source = [&ds, dim](std::span<const std::int64_t> ids, float* out) {
    for (std::size_t i = 0; i < ids.size(); ++i)
      std::memcpy(out + std::int64_t(i) * dim, ds.features().data() + ids[i] * dim,
                  std::size_t(dim) * sizeof(float));
    return status::ok();
  };
  SPINDLE_ASSIGN_OR_RETURN(auto executors, serving::device_executors::create_for_rank(
                                               ds, std::size_t(1024) * std::size_t(dim) * 4));
  SPINDLE_TRY(executors.fill_rows(source));
  SPINDLE_ASSIGN_OR_RETURN(auto ex, executors.make());
  serving::gnn_pipeline dev(ds, *in->model, in->router, in->pool, source, ex);
  serving::gnn_pipeline host(ds, *in->model, in->router, in->pool, source);
  comparison c;
  for (int b = 0; b < 8; ++b) {
    const auto batch = served_batch(b);
    compare_results(dev.run(batch, serving::psgs_router::choice::large),
                    host.run(batch, serving::psgs_router::choice::small), c);
  }
  // The split gather alone, rows to the host: equal to the source's, bit for bit.
  std::vector<std::int64_t> ids;
  for (std::int64_t v = 0; v < ds.num_nodes(); v += 7) ids.push_back(v);
  std::vector<float> got(ids.size() * std::size_t(dim)), want(got.size());
  SPINDLE_TRY(ex->gather_from(source, dim, ids, got.data(), false));
  SPINDLE_TRY(source(ids, want.data()));
  if (got != want) return make_error(errc::internal, "the split gather's rows differ from the source's");
  return c.check(fmt::format("8 batches of 64 (1,024 rows on the device), {} rows gathered split "
                             "and equal", ids.size()),
                 result);
}

}  // namespace spindle::gpu
