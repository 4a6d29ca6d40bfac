#include "runtime/rank_shard.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "core/checksum.hpp"
#include "config/cluster_ranks.hpp"
#include "core/log.hpp"
#include "features/dataset_partition.hpp"
#include "features/dataset_placement.hpp"
#include "features/feature_shard.hpp"
#include "features/plan_manifest.hpp"
#include "runtime/graph_updates.hpp"

namespace spindle::runtime {

namespace ucx = transport::ucx;

expected<int> host_shard_of(const features::placement_plan& plan, int server) {
  for (std::size_t i = 0; i < plan.shards.size(); ++i)
    if (plan.shards[i].server == server && plan.shards[i].tier == features::shard_tier::host)
      return int(i);
  return make_error(errc::invalid_argument,
                    "server {} has no host-memory shard in the plan (memory = 0?)", server);
}

expected<std::vector<region_slot>> region_layout(const features::placement_plan& plan, int server,
                                                 std::uint32_t dim) {
  SPINDLE_ASSIGN_OR_RETURN(int host, host_shard_of(plan, server));
  std::vector<region_slot> out;
  std::uint64_t at = 0;
  auto add = [&](int shard) {
    const auto bytes = features::shard_bytes(
        std::max<std::uint64_t>(1, plan.lookup.shard_row_count(features::shard_index(shard))), dim);
    out.push_back({shard, at, bytes});
    at += bytes;
  };
  add(host);
  for (std::size_t i = 0; i < plan.shards.size(); ++i)
    if (plan.shards[i].server == server && int(i) != host) add(int(i));
  return out;
}

struct rank_shard::region {
  ucx::mapped_memory memory;
  std::string descriptor;
  explicit region(ucx::mapped_memory m) : memory(std::move(m)) {}
};

namespace {

// Where `node`'s row is in shard `shard` of `plan`, if that shard holds it.
const std::byte* row_in(const features::placement_plan& plan, int shard, const std::byte* rows,
                        std::uint64_t node, std::size_t row_bytes) {
  const auto loc = plan.lookup.locate(node);
  for (const auto& o : loc.owners)
    if (o.shard == shard) return rows + (o.start_row + loc.index) * row_bytes;
  return nullptr;
}

}  // namespace

rank_shard::rank_shard(const config::topology& topo, graph::dataset ds, int rank)
    : topo_(topo), ds_(std::move(ds)), rank_(rank) {}

rank_shard::~rank_shard() {
  loop_.reset();  // stop progressing before the regions go
  std::lock_guard lock(mu_);
  regions_.clear();
  blobs_.clear();
  lent_.clear();
}

namespace {

// The plan a partition was made with, as `spindle partition` stored it; a whole
// copy (or a partition stored before plans were) is placed here, as every rank
// places it, so all ranks agree.
expected<features::placement_plan> plan_of(const graph::dataset& ds,
                                           const config::topology& topo) {
  const auto t0 = std::chrono::steady_clock::now();
  const bool stored = ds.partitioned() && features::has_plan_manifest(ds.dir());
  const auto policy = features::partition_policy(ds);
  auto plan = stored ? features::read_plan_manifest(ds.dir(), topo, features::row_bytes_of(ds),
                                                    std::uint64_t(ds.num_nodes()), policy)
                     : features::place_dataset(ds, topo, policy);
  if (plan)
    log::info("{}: placement plan {} in {:.2f} s", ds.dir(), stored ? "read" : "computed",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return plan;
}

}  // namespace

expected<std::unique_ptr<rank_shard>> rank_shard::start(const config::topology& topo,
                                                        const std::string& dataset, int rank,
                                                        bool skip_verify,
                                                        const graph_update_args& updates) {
  // A partitioned dataset (`spindle partition`): this rank's folder, whose rows are
  // exactly those of its shards under the same plan (checked by checksum).
  // A rank joining a running cluster has no partition of its own: it takes rank
  // 0's (every partition holds the graph and FAP whole, and the cluster's plan).
  const int folder = rank < int(topo.servers.size()) ? rank : 0;
  SPINDLE_ASSIGN_OR_RETURN(
      auto ds, graph::open_for_serving(features::rank_dataset_dir(dataset, folder), skip_verify));
  if (!updates.on && !updates.stream.empty())
    return make_error(errc::invalid_argument, "--graph-stream {} without --graph-updates",
                      updates.stream);
  if (!updates.on) {  // the base alone: a dataset whose logs hold updates would answer stale
    SPINDLE_TRY(refuse_unapplied_updates(ds, "cluster ranks without --graph-updates"));
  } else if (updates.stream.empty()) {
    return make_error(errc::invalid_argument,
                      "--graph-updates on a cluster rank needs --graph-stream HOST:PORT: every "
                      "rank applies the stream's batches in the stream's order");
  }
  std::unique_ptr<rank_shard> s(new rank_shard(topo, std::move(ds), rank));
  if (updates.on) SPINDLE_TRY(s->follow_updates(updates));
  SPINDLE_ASSIGN_OR_RETURN(auto ctx, ucx::context::create());
  s->ctx_.emplace(std::move(ctx));
  SPINDLE_ASSIGN_OR_RETURN(auto w, ucx::worker::create(*s->ctx_));
  s->worker_.emplace(std::move(w));
  SPINDLE_ASSIGN_OR_RETURN(s->address_, s->worker_->address());
  SPINDLE_ASSIGN_OR_RETURN(auto plan, plan_of(s->ds_, topo));
  SPINDLE_TRY(features::check_partition(s->ds_, folder, plan));
  if (s->ds_.partitioned())
    log::info("rank {}: serving its partition {} ({} of {} feature rows)", rank, s->ds_.dir(),
              s->ds_.part_rows().size(), s->ds_.num_nodes());
  s->start_plan_ = checksum_hex(features::plan_checksum(plan));
  auto shared = std::make_shared<const features::placement_plan>(std::move(plan));
  if (rank >= int(topo.servers.size())) {
    // A rank joining a running cluster (`node --join`): no row of the TOML's
    // plan is its; it builds its shard of the plan the cluster re-plans with it.
    s->plans_[0] = {0, shared, nullptr};
  } else {
    build_report r;
    SPINDLE_ASSIGN_OR_RETURN(auto reg, s->fill(*shared, nullptr, r));
    s->plans_[0] = {0, shared, reg->memory.data()};
    s->regions_[0] = std::move(reg);
  }
  // From here on the loop owns the worker; descriptors use its cached address.
  s->loop_ = std::make_unique<ucx::progress_loop>(*s->worker_);
  return s;
}

status rank_shard::follow_updates(graph_update_args a) {
  // A log of its own (ranks on one machine may share the dataset's folder), and
  // no compaction: the placement tiers hold the base's rows, read through the delta.
  if (a.log.empty()) a.log = fmt::format("{}/graph.rank{}.log", ds_.dir(), rank_);
  if (a.compact_at > 0)
    log::info("rank {}: graph updates are not compacted on a cluster rank (the delta keeps "
              "them; `spindle compact` folds a rank's log offline)", rank_);
  a.compact_at = 0;
  a.cluster_rank = true;
  SPINDLE_ASSIGN_OR_RETURN(graph_, start_graph_updates(ds_, a, false));
  constexpr auto kCatchUp = std::chrono::seconds(60);
  if (!graph_.stream->wait_caught_up(kCatchUp))
    return make_error(errc::unavailable,
                      "rank {}: the graph stream {} at {} was not caught up within {} s (applied "
                      "{}, errors {}): a rank serves only once it holds every batch",
                      rank_, a.stream_key, a.stream, kCatchUp.count(),
                      graph_.stream->stats().applied, graph_.stream->stats().errors);
  log::info("rank {}: graph at version {}, caught up with stream {}", rank_,
            ds_.live()->version(), a.stream_key);
  return status::ok();
}

expected<std::unique_ptr<rank_shard::region>> rank_shard::fill(const features::placement_plan& plan,
                                                               const epoch_plan* previous,
                                                               build_report& r,
                                                               const row_sources& from) {
  const auto dim = std::uint32_t(ds_.feature_dim());
  const std::size_t row_bytes = std::size_t(dim) * sizeof(float);
  SPINDLE_ASSIGN_OR_RETURN(auto layout, region_layout(plan, rank_, dim));
  SPINDLE_ASSIGN_OR_RETURN(
      auto mem, ucx::mapped_memory::allocate(*ctx_, layout.back().offset + layout.back().bytes));
  int old_shard = -1;
  if (previous && previous->own_rows) {
    auto s = host_shard_of(*previous->plan, rank_);
    if (s) old_shard = *s;
  }
  // Rows kept from this node's previous host shard are copied; the others are
  // fetched from their current owners in one batch (rows to positions below).
  std::vector<std::int64_t> wanted;
  std::vector<std::byte*> wanted_at;
  for (const auto& slot : layout) {
    const bool host = &slot == &layout.front();
    const auto rows = plan.lookup.shard_rows(features::shard_index(slot.shard));
    std::byte* dst = mem.data() + slot.offset;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const std::byte* src = nullptr;
      if (host && old_shard >= 0)
        src = row_in(*previous->plan, old_shard, previous->own_rows, rows[i], row_bytes);
      if (src) {
        ++r.kept;
        std::memcpy(dst + i * row_bytes, src, row_bytes);
      } else {
        wanted.push_back(std::int64_t(rows[i]));
        wanted_at.push_back(dst + i * row_bytes);
      }
    }
    r.rows += rows.size();
  }
  SPINDLE_TRY(place_wanted(plan, wanted, wanted_at, row_bytes, from, r));
  auto reg = std::make_unique<region>(std::move(mem));
  SPINDLE_TRY(describe(*reg));
  return reg;
}

namespace {

// Runs `fetch` over the rows of `ids` not yet had; the rows it fills land in
// `rows` at their positions in `ids`. Returns its status (ok with nothing to do).
status fetch_missing(const rank_shard::row_fetch& fetch, const features::placement_plan& next,
                     std::span<const std::int64_t> ids, std::vector<std::uint8_t>& have,
                     std::vector<float>& rows, std::size_t dim) {
  if (!fetch) return make_error(errc::unavailable, "no reader of the cluster's rows");
  std::vector<std::int64_t> missing;
  std::vector<std::size_t> where;
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (!have[i]) missing.push_back(ids[i]), where.push_back(i);
  if (missing.empty()) return status::ok();
  std::vector<float> got(missing.size() * dim);
  std::vector<std::uint8_t> got_have(missing.size(), 0);
  auto st = fetch(next, missing, got.data(), got_have);
  for (std::size_t k = 0; k < missing.size(); ++k) {
    if (!got_have[k]) continue;
    std::memcpy(rows.data() + where[k] * dim, got.data() + k * dim, dim * sizeof(float));
    have[where[k]] = 1;
  }
  return st;
}

std::uint64_t count_had(const std::vector<std::uint8_t>& have) {
  return std::uint64_t(std::count(have.begin(), have.end(), std::uint8_t(1)));
}

// " (why)" for a source that failed, "" for one that answered.
std::string failure(const status& st) {
  return st.is_ok() ? std::string() : fmt::format(" ({})", st.message());
}

}  // namespace

status rank_shard::place_wanted(const features::placement_plan& next,
                                std::span<const std::int64_t> wanted,
                                std::span<std::byte* const> at, std::size_t row_bytes,
                                const row_sources& from, build_report& r) const {
  if (wanted.empty()) return status::ok();
  const std::size_t dim = row_bytes / sizeof(float);
  std::vector<float> rows(wanted.size() * dim);
  std::vector<std::uint8_t> have(wanted.size(), 0);
  const auto owners = fetch_missing(from.owners, next, wanted, have, rows, dim);
  r.fetched = count_had(have);
  for (std::size_t i = 0; i < wanted.size(); ++i) {  // this node's own copy
    if (have[i]) continue;
    const float* src = ds_.feature_row(wanted[i]);
    if (!src) continue;  // a partition: the row lives only on its owners
    std::memcpy(rows.data() + i * dim, src, row_bytes);
    have[i] = 1;
    ++r.from_disk;
  }
  status copies = status::ok();
  if (r.fetched + r.from_disk < wanted.size()) {
    copies = fetch_missing(from.copies, next, wanted, have, rows, dim);
    r.lent = count_had(have) - r.fetched - r.from_disk;
  }
  for (std::size_t i = 0; i < wanted.size(); ++i) {
    if (!have[i])
      return make_error(errc::unavailable,
                        "rank {}: node {}'s row ({} of {} rows this shard needs) is not in its "
                        "copy {}, in no live owner's region{} and in no peer's copy{}",
                        rank_, wanted[i], wanted.size() - count_had(have), wanted.size(), ds_.dir(),
                        failure(owners), failure(copies));
    std::memcpy(at[i], rows.data() + i * dim, row_bytes);
  }
  if (r.from_disk > 0 && from.owners && !ds_.partitioned())
    log::warn(
        "rank {}: {} rows read from this node's copy of the dataset: their owners could "
        "not be read ({})",
        rank_, r.from_disk, owners.message());
  return status::ok();
}

status rank_shard::describe(region& reg) const {
  ucx::region_descriptor d;
  d.worker_address = address_;
  SPINDLE_ASSIGN_OR_RETURN(d.rkey, reg.memory.pack_rkey());
  d.base = reinterpret_cast<std::uint64_t>(reg.memory.data());
  d.length = reg.memory.size();
  reg.descriptor = d.encode();
  return status::ok();
}

epoch_plan rank_shard::latest() const {
  std::lock_guard lock(mu_);
  return plans_.rbegin()->second;
}

std::optional<epoch_plan> rank_shard::at(int epoch) const {
  std::lock_guard lock(mu_);
  auto it = plans_.find(epoch);
  if (it == plans_.end()) return std::nullopt;
  return it->second;
}

std::string rank_shard::descriptor(int epoch) const {
  std::lock_guard lock(mu_);
  auto it = regions_.find(epoch);
  return it == regions_.end() ? std::string() : it->second->descriptor;
}

expected<rank_shard::build_report> rank_shard::build(int epoch, std::span<const double> fap,
                                                     std::span<const std::int32_t> home,
                                                     const row_sources& from,
                                                     config::plan_ranks ranks) {
  const auto start = std::chrono::steady_clock::now();
  const auto previous = latest();
  if (epoch <= previous.epoch)
    return make_error(errc::invalid_argument, "placement epoch {} is not after {}", epoch,
                      previous.epoch);
  // The plan's ranks: the TOML's, or as many as the cluster has after joins and
  // leaves, some perhaps absent (planned with no memory).
  const auto topo = config::with_ranks(topo_, ranks);
  SPINDLE_ASSIGN_OR_RETURN(auto plan, features::replace_dataset(ds_, topo, fap, home));
  auto shared = std::make_shared<const features::placement_plan>(std::move(plan));
  build_report r;
  r.moved = features::rows_moved(*previous.plan, *shared);
  std::unique_ptr<region> reg;
  // A rank past the plan's (it leaves) or absent from it holds no row of it.
  if (rank_ < int(topo.servers.size()) && !ranks.is_absent(rank_)) {
    SPINDLE_ASSIGN_OR_RETURN(reg, fill(*shared, &previous, r, from));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::lock_guard lock(mu_);
  plans_[epoch] = {epoch, shared, reg ? reg->memory.data() : nullptr};
  if (reg) regions_[epoch] = std::move(reg);
  return r;
}

void rank_shard::retire_before(int epoch) {
  std::lock_guard lock(mu_);
  while (!plans_.empty() && plans_.begin()->first < epoch) {
    regions_.erase(plans_.begin()->first);
    plans_.erase(plans_.begin());
  }
}

expected<std::string> rank_shard::publish_blob(int epoch, std::span<const std::byte> bytes) {
  SPINDLE_ASSIGN_OR_RETURN(
      auto mem, ucx::mapped_memory::allocate(*ctx_, std::max<std::size_t>(1, bytes.size())));
  std::memcpy(mem.data(), bytes.data(), bytes.size());
  auto reg = std::make_unique<region>(std::move(mem));
  SPINDLE_TRY(describe(*reg));
  std::lock_guard lock(mu_);
  while (!blobs_.empty() && blobs_.begin()->first < epoch - 2) blobs_.erase(blobs_.begin());
  auto& slot = blobs_[epoch];
  slot = std::move(reg);
  return slot->descriptor;
}

bool rank_shard::owns_blob(const std::string& descriptor) const {
  std::lock_guard lock(mu_);
  for (const auto& [epoch, blob] : blobs_)
    if (blob->descriptor == descriptor) return true;
  return false;
}

status rank_shard::read_blob(const std::string& descriptor, std::span<std::byte> out) {
  {
    std::lock_guard lock(mu_);
    for (const auto& [epoch, blob] : blobs_) {
      if (blob->descriptor != descriptor) continue;  // our own: by pointer
      if (out.size() > blob->memory.size())
        return make_error(errc::invalid_argument, "blob holds {} bytes, {} asked",
                          blob->memory.size(), out.size());
      std::memcpy(out.data(), blob->memory.data(), out.size());
      return status::ok();
    }
  }
  SPINDLE_ASSIGN_OR_RETURN(auto d, ucx::region_descriptor::decode(descriptor));
  if (out.size() > d.length)
    return make_error(errc::invalid_argument, "blob holds {} bytes, {} asked", d.length,
                      out.size());
  // A worker of its own: the progress loop owns the shard's worker.
  SPINDLE_ASSIGN_OR_RETURN(auto w, ucx::worker::create(*ctx_));
  SPINDLE_ASSIGN_OR_RETURN(auto remote, ucx::remote_region::attach(w, d));
  const read_op op{0, out.data(), out.size()};
  return remote->read({&op, 1});
}

expected<rank_shard::lent_rows> rank_shard::lend(int to, std::span<const std::int64_t> ids) {
  if (ids.empty()) {
    std::lock_guard lock(mu_);
    lent_.erase(to);
    return lent_rows{};
  }
  const std::size_t row_bytes = features::row_bytes_of(ds_);
  lent_rows out;
  out.held.assign(ids.size(), 0);
  std::vector<const float*> rows;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= ds_.num_nodes())
      return make_error(errc::invalid_argument,
                        "rank {}: rows asked by rank {}: node {} is outside the graph's {} nodes",
                        rank_, to, ids[i], ds_.num_nodes());
    if (const float* row = ds_.feature_row(ids[i])) {
      out.held[i] = 1;
      rows.push_back(row);
    }
  }
  SPINDLE_ASSIGN_OR_RETURN(auto mem, ucx::mapped_memory::allocate(
                                         *ctx_, std::max<std::size_t>(1, rows.size() * row_bytes)));
  for (std::size_t k = 0; k < rows.size(); ++k)
    std::memcpy(mem.data() + k * row_bytes, rows[k], row_bytes);
  auto reg = std::make_unique<region>(std::move(mem));
  SPINDLE_TRY(describe(*reg));
  out.descriptor = reg->descriptor;
  std::lock_guard lock(mu_);
  lent_[to] = std::move(reg);
  return out;
}

}  // namespace spindle::runtime
