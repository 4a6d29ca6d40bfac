#include "serving/cuda_executor.hpp"

#include <cstring>

#include "core/log.hpp"
#include "gpu/gnn_kernels.hpp"

namespace spindle::serving {
namespace {

constexpr std::size_t kFirstArena = std::size_t(64) << 20;  // grown when a batch needs more
constexpr std::size_t kLargestArena = std::size_t(16) << 30;

bool exhausted(const status& st) { return st.code() == errc::resource_exhausted; }

}  // namespace

expected<std::unique_ptr<cuda_executor>> cuda_executor::create(
    std::shared_ptr<cuda_resident> resident, std::shared_ptr<peer_exchange> peers) {
  SPINDLE_TRY(gpu::set_device(resident->gpu()));
  std::unique_ptr<cuda_executor> ex(new cuda_executor);
  ex->resident_ = std::move(resident);
  ex->peers_ = std::move(peers);
  ex->gathered_ = gpu::device_buffer(ex->resident_->gpu());
  SPINDLE_ASSIGN_OR_RETURN(ex->sampler_, cuda_sampling_executor::create(ex->resident_->csr()));
  SPINDLE_ASSIGN_OR_RETURN(ex->arena_, gpu::device_arena::create(kFirstArena));
  if (auto blas = gpu::blas_create())
    ex->blas_ = *blas;
  else  // sampling and gather still run on the device
    log::warn("cuda executor: {}; forward passes run on the host", blas.error().message());
  return ex;
}

cuda_executor::~cuda_executor() {
  (void)gpu::set_device(resident_->gpu());
  gpu::blas_destroy(blas_);
  for (auto& [stream, blas] : slot_blas_) gpu::blas_destroy(blas);
}

// A batch larger than the arena: a new arena of twice what was asked (the old
// one's buffers are dead once a batch failed), up to kLargestArena.
status cuda_executor::grow_arena(std::size_t at_least) {
  const std::size_t want = std::max(2 * arena_->capacity(), 2 * at_least);
  if (arena_->capacity() >= kLargestArena)
    return make_error(errc::resource_exhausted, "cuda executor: a batch needs more than {} MiB",
                      kLargestArena >> 20);
  arena_.reset();
  SPINDLE_ASSIGN_OR_RETURN(arena_, gpu::device_arena::create(std::min(want, kLargestArena)));
  log::info("cuda executor: batch arena grown to {} MiB", arena_->capacity() >> 20);
  return status::ok();
}

status cuda_executor::sample(const graph::csr_view& g, std::span<const std::int64_t> seeds,
                             const graph::sample_options& options, graph::sampled_subgraph& out) {
  SPINDLE_TRY(gpu::set_device(resident_->gpu()));  // the thread may have served another GPU
  return sampler_->sample_into(g, seeds, options, out);
}

// The batch's rows into gathered_ on the device, and with `download` to `out`.
// Rows this GPU holds, or reads over UVA, come from the gather kernel; with a
// partitioned tier, rows a peer holds come from it over NCCL, and both are
// placed at their positions on the device.
status cuda_executor::gather_on_device(std::int64_t dim, std::span<const std::int64_t> ids,
                                       float* out, bool download) {
  const std::size_t row_bytes = std::size_t(dim) * 4, out_bytes = ids.size() * row_bytes;
  gathered_for_.forget();
  if (ids.size() * (16 + row_bytes) + 1024 > arena_->capacity()) {
    SPINDLE_TRY(grow_arena(ids.size() * (16 + row_bytes) + 1024));
  }
  SPINDLE_ASSIGN_OR_RETURN(void* rows, gathered_.reserve(out_bytes));
  auto* d_out = static_cast<float*>(rows);
  arena_->reset();
  void* const stream = arena_->stream();
  if (peers_)  // own: held here or read over UVA; peer: held by a peer GPU
    split_ids(ids, [&](std::int64_t v) { return !peers_->from_peer(resident_->gpu(), v); });
  else
    own_ids_.clear(), peer_ids_.clear(), own_at_.clear(), peer_at_.clear();
  if (peer_ids_.empty()) {  // every row here or over UVA: gathered in place
    SPINDLE_ASSIGN_OR_RETURN(auto* d_ids, arena_->take_n<std::int64_t>(ids.size()));
    SPINDLE_TRY(gpu::copy_to_device_async(d_ids, ids.data(), ids.size_bytes(), stream));
    SPINDLE_TRY(resident_->gather_async(dim, d_ids, std::int64_t(ids.size()), d_out, stream));
  } else {
    const auto own = own_ids_.size();
    SPINDLE_ASSIGN_OR_RETURN(auto* d_ids, arena_->take_n<std::int64_t>(own));
    SPINDLE_ASSIGN_OR_RETURN(auto* d_at, arena_->take_n<std::int64_t>(own));
    SPINDLE_ASSIGN_OR_RETURN(auto* d_rows, arena_->take_n<float>(own * std::size_t(dim)));
    SPINDLE_TRY(gpu::copy_to_device_async(d_ids, own_ids_.data(), own * 8, stream));
    SPINDLE_TRY(gpu::copy_to_device_async(d_at, own_at_.data(), own * 8, stream));
    SPINDLE_TRY(resident_->gather_async(dim, d_ids, std::int64_t(own), d_rows, stream));
    SPINDLE_TRY(gpu::place_rows_async(d_rows, d_at, std::int64_t(own), dim, d_out, stream));
    SPINDLE_TRY(peers_->fetch(resident_->gpu(), peer_ids_, peer_at_, dim, d_out, stream));
    SPINDLE_TRY(gpu::set_device(resident_->gpu()));
  }
  if (download) return download_rows(out, out_bytes);
  // Kept for the pass, which reads gathered_ on the same stream after the gather.
  gathered_for_.note(out, out_bytes);
  return status::ok();
}

status cuda_executor::download_rows(float* out, std::size_t bytes) {
  void* const stream = arena_->stream();
  SPINDLE_ASSIGN_OR_RETURN(void* pinned, staging_.reserve(bytes));
  SPINDLE_TRY(gpu::copy_to_host_async(pinned, gathered_.data(), bytes, stream));
  SPINDLE_TRY(gpu::synchronize(stream));
  std::memcpy(out, pinned, bytes);
  return status::ok();
}

// The rows to `out` (a caller may change them there before the pass: a live
// graph's rows written over the base's, so the pass uploads what `out` holds).
void cuda_executor::gather(std::span<const float> table, std::int64_t dim,
                           std::span<const std::int64_t> ids, float* out) {
  bring_back_pending();  // gathered_ is overwritten next
  gathered_for_.forget();
  // The dataset's own table is on the device tiers; any other (a remote
  // shard's rows), or a device failure, is gathered on the host.
  if (resident_->holds(table)) {
    auto st = gpu::set_device(resident_->gpu());
    if (st) st = gather_on_device(dim, ids, out, true);
    if (st) return;
    log::warn("cuda executor: the device gather failed ({}); gathering on the host", st.message());
  }
  host_.gather(table, dim, ids, out);
}

// The rows stay on the device for the pass that follows (a batch of 64 seeds
// gathers about 5 MB, whose download cost more than the pass on an H200); they
// come back to `out` only when host_rows asks, or before gathered_ is reused.
void cuda_executor::gather_for_pass(std::span<const float> table, std::int64_t dim,
                                    std::span<const std::int64_t> ids, float* out) {
  bring_back_pending();
  gathered_for_.forget();
  if (resident_->holds(table)) {
    auto st = gpu::set_device(resident_->gpu());
    if (st) st = gather_on_device(dim, ids, out, false);
    if (st) return keep_pending(out, dim, ids, table, nullptr);
    log::warn("cuda executor: the device gather failed ({}); gathering on the host", st.message());
  }
  host_.gather(table, dim, ids, out);
}

void cuda_executor::keep_pending(float* out, std::int64_t dim, std::span<const std::int64_t> ids,
                                 std::span<const float> table, const feature_source* source) {
  pending_ = {out, ids.size() * std::size_t(dim) * sizeof(float), table, source, dim, ids};
}

// A cluster rank's rows (node --device cuda): those in the device tier (filled
// once through the cluster's shards) by the gather kernel, the rest through
// `source` and uploaded; before the device tier is filled, all through `source`.
status cuda_executor::gather_from(const feature_source& source, std::int64_t dim,
                                  std::span<const std::int64_t> ids, float* out, bool for_pass) {
  bring_back_pending();
  gathered_for_.forget();
  if (!resident_->rows_ready() || resident_->tiers().device_nodes.empty())
    return source(ids, out);
  auto st = gpu::set_device(resident_->gpu());
  if (st) st = gather_split(source, dim, ids, out, !for_pass);
  if (st) {
    if (for_pass) keep_pending(out, dim, ids, {}, &source);
    return status::ok();
  }
  log::warn("cuda executor: the device gather failed ({}); reading the rows through the "
            "cluster's shards", st.message());
  return source(ids, out);
}

status cuda_executor::gather_split(const feature_source& source, std::int64_t dim,
                                   std::span<const std::int64_t> ids, float* out, bool download) {
  // own_: in the device tier; peer_: read through `source`.
  split_ids(ids, [&](std::int64_t v) { return resident_->on_device(v); });
  const std::size_t row_bytes = std::size_t(dim) * 4, out_bytes = ids.size() * row_bytes;
  source_rows_.resize(peer_ids_.size() * std::size_t(dim));
  SPINDLE_TRY(source(peer_ids_, source_rows_.data()));
  if (ids.size() * (24 + row_bytes) + 4096 > arena_->capacity())
    SPINDLE_TRY(grow_arena(ids.size() * (24 + row_bytes) + 4096));
  SPINDLE_ASSIGN_OR_RETURN(void* rows, gathered_.reserve(out_bytes));
  auto* d_out = static_cast<float*>(rows);
  arena_->reset();
  void* const stream = arena_->stream();
  for (int part = 0; part < 2; ++part) {
    const auto& at = part == 0 ? own_at_ : peer_at_;
    const auto n = std::int64_t(at.size());
    if (n == 0) continue;
    SPINDLE_ASSIGN_OR_RETURN(auto* d_at, arena_->take_n<std::int64_t>(at.size()));
    SPINDLE_ASSIGN_OR_RETURN(auto* d_rows, arena_->take_n<float>(at.size() * std::size_t(dim)));
    SPINDLE_TRY(gpu::copy_to_device_async(d_at, at.data(), at.size() * 8, stream));
    if (part == 0) {
      SPINDLE_ASSIGN_OR_RETURN(auto* d_ids, arena_->take_n<std::int64_t>(own_ids_.size()));
      SPINDLE_TRY(gpu::copy_to_device_async(d_ids, own_ids_.data(), own_ids_.size() * 8, stream));
      SPINDLE_TRY(resident_->gather_async(dim, d_ids, n, d_rows, stream));
    } else {
      SPINDLE_TRY(gpu::copy_to_device_async(d_rows, source_rows_.data(),
                                            source_rows_.size() * 4, stream));
    }
    SPINDLE_TRY(gpu::place_rows_async(d_rows, d_at, n, dim, d_out, stream));
  }
  if (download) return download_rows(out, out_bytes);
  gathered_for_.note(out, out_bytes);
  return status::ok();
}

// Before gathered_ is reused: the rows of the last gather_for_pass come back to
// their host buffer; should that fail, the buffer is marked lost, so the pass
// reading it fails (host_rows) instead of reading whatever it held before.
void cuda_executor::bring_back_pending() {
  float* const out = pending_.out;
  if (auto st = host_rows(out); !st) {
    log::warn("cuda executor: {}", st.message());
    lost_ = out;
  }
}

status cuda_executor::host_rows(float* out) {
  if (out != nullptr && out == lost_)
    return make_error(errc::unavailable, "the batch's feature rows could not be read back from "
                                         "the GPU or through the cluster's shards");
  if (out == nullptr || out != pending_.out) return status::ok();
  const auto p = pending_;
  pending_ = {};
  auto st = gpu::set_device(resident_->gpu());
  if (st) st = download_rows(p.out, p.bytes);
  if (st) return st;
  log::warn("cuda executor: the gathered rows did not come back ({}); gathering them on the host",
            st.message());
  if (p.source) return (*p.source)(p.ids, p.out);
  host_.gather(p.table, p.dim, p.ids, p.out);
  return status::ok();
}

void cuda_executor::drop_rows() {
  lost_ = nullptr;
  pending_ = {};
}

const float* cuda_executor::take_gathered(const nn::tensor& x) {
  const bool same = gathered_for_.take(x.data(), std::size_t(x.numel()) * sizeof(float));
  return same ? static_cast<const float*>(gathered_.data()) : nullptr;
}

expected<nn::tensor> cuda_executor::forward_on_device(const nn::model& m, nn::allocator& a,
                                                      std::span<const nn::block> blocks,
                                                      std::span<const float> degree,
                                                      const nn::tensor& x, const float* x_device) {
  SPINDLE_ASSIGN_OR_RETURN(const device_model* dm, resident_->model(m));
  for (int attempt = 0;; ++attempt) {
    arena_->reset();
    auto y = dm->forward(*arena_, blas_, a, blocks, degree, x, x_device);
    if (y || !exhausted(y.error()) || attempt == 3) return y;
    SPINDLE_TRY(grow_arena(arena_->capacity()));
  }
}

expected<nn::tensor> cuda_executor::forward(const nn::model& m, nn::allocator& a,
                                            std::span<const nn::block> blocks,
                                            std::span<const float> degree, const nn::tensor& x) {
  // x is the rows this executor just gathered: they are on the device already.
  const float* x_device = take_gathered(x);
  if (!x_device) SPINDLE_TRY(host_rows(const_cast<float*>(x.data())));  // uploaded from there
  if (blas_ && device_model::supports(m) && !blocks.empty()) {
    auto on = gpu::set_device(resident_->gpu());
    auto y = on ? forward_on_device(m, a, blocks, degree, x, x_device) : expected<nn::tensor>(on);
    if (y) return y;
    log::warn("cuda executor: the device forward pass failed ({}); running on the host",
              y.error().message());
  }
  SPINDLE_TRY(host_rows(const_cast<float*>(x.data())));  // the host pass reads them there
  return host_.forward(m, a, blocks, degree, x);
}

expected<void*> cuda_executor::blas_for(void* stream) {
  std::lock_guard lock(slot_mu_);
  if (auto it = slot_blas_.find(stream); it != slot_blas_.end()) return it->second;
  SPINDLE_ASSIGN_OR_RETURN(void* blas, gpu::blas_create());
  return slot_blas_[stream] = blas;
}

std::uint64_t cuda_executor::slot_bytes(const nn::model& m, std::span<const nn::block> blocks,
                                         std::int64_t x_rows, std::size_t degree_bytes) const {
  if (!device_model::supports(m) || blocks.empty()) return 0;
  return device_model::arena_bytes(m.desc(), blocks, x_rows, degree_bytes);
}

expected<nn::tensor> cuda_executor::forward_in(device_slot slot, const nn::model& m,
                                               nn::allocator& a, std::span<const nn::block> blocks,
                                               std::span<const float> degree, const nn::tensor& x) {
  // A slot sized for the host (the model was bf16 when it was sized; the precision
  // tunable switched it since) runs this batch on the host too.
  if (!device_model::supports(m) || blocks.empty() || slot.memory.size() == 0)
    return batch_executor::forward_in(slot, m, a, blocks, degree, x);
  SPINDLE_TRY(gpu::set_device(resident_->gpu()));
  SPINDLE_ASSIGN_OR_RETURN(const device_model* dm, resident_->model(m));
  SPINDLE_ASSIGN_OR_RETURN(void* blas, blas_for(slot.stream));
  auto arena = gpu::device_arena::over(slot.memory.data(), slot.memory.size(), slot.stream);
  return dm->forward(*arena, blas, a, blocks, degree, x);
}

expected<device_executors> device_executors::create(const graph::dataset& ds,
                                                    gpu::device_kind device,
                                                    std::size_t device_feature_bytes_per_gpu,
                                                    gpu_layout layout) {
  device_executors out;
  if (device != gpu::device_kind::cuda) return out;
  SPINDLE_ASSIGN_OR_RETURN(const int have, gpu::device_count());
  if (layout.gpus < 1 || layout.gpus > have)
    return make_error(errc::invalid_argument, "--gpus {}: this machine has {} GPU(s)", layout.gpus,
                      have);
  auto tiers = features::plan_gpu_tiers(ds.fap(), ds.metadata().num_nodes, ds.feature_dim(),
                              device_feature_bytes_per_gpu, layout.gpus, layout.partition);
  for (int g = 0; g < layout.gpus; ++g) {
    SPINDLE_ASSIGN_OR_RETURN(
        auto r, cuda_resident::create(ds, std::move(tiers.per_gpu[std::size_t(g)]), g));
    out.residents_.push_back(std::move(r));
  }
  if (layout.gpus > 1 && layout.partition) {
    auto peers = peer_exchange::create(out.residents_, std::move(tiers.owner));
    if (peers)
      out.peers_ = std::move(*peers);
    else  // still correct: a peer's rows are this GPU's host tier, read over UVA
      log::warn("cuda: {}; rows other GPUs hold are read from host memory over UVA",
                peers.error().message());
  }
  SPINDLE_TRY(gpu::set_device(0));  // the creating thread goes on with GPU 0 current
  log::info("cuda: {} GPU(s), device tier {} ({:.0f}% of FAP mass on GPUs)", layout.gpus,
            layout.gpus == 1   ? "on one GPU"
            : layout.partition ? "partitioned"
                               : "replicated",
            100 * tiers.device_fap_share);
  return out;
}

expected<device_executors> device_executors::create_for_rank(const graph::dataset& ds,
                                                             std::size_t device_feature_bytes) {
  SPINDLE_ASSIGN_OR_RETURN(const int have, gpu::device_count());
  if (have < 1) return make_error(errc::unavailable, "this machine has no GPU");
  auto tiers = features::plan_feature_tiers(ds.fap(), ds.metadata().num_nodes, ds.feature_dim(),
                                            device_feature_bytes);
  device_executors out;
  SPINDLE_ASSIGN_OR_RETURN(auto r, cuda_resident::create_for_rank(ds, std::move(tiers), 0));
  out.residents_.push_back(std::move(r));
  return out;
}

status device_executors::fill_rows(const feature_source& read) {
  for (const auto& r : residents_) SPINDLE_TRY(r->fill_rows(read));
  return status::ok();
}

expected<std::shared_ptr<batch_executor>> device_executors::make() {
  if (residents_.empty()) return std::shared_ptr<batch_executor>();
  const auto& r = residents_[std::size_t(next_++ % int(residents_.size()))];
  SPINDLE_ASSIGN_OR_RETURN(auto ex, cuda_executor::create(r, peers_));
  return std::shared_ptr<batch_executor>(std::move(ex));
}

void device_executors::forget(const nn::model& m) const {
  for (const auto& r : residents_) r->forget(m);
}

expected<std::shared_ptr<batch_executor>> make_large_executor(const graph::dataset& ds,
                                                              gpu::device_kind device,
                                                              std::size_t device_feature_bytes) {
  SPINDLE_ASSIGN_OR_RETURN(auto executors,
                           device_executors::create(ds, device, device_feature_bytes));
  return executors.make();
}

}  // namespace spindle::serving
