#include "runtime/cluster_features.hpp"

#include <algorithm>
#include <cstring>

#include "core/log.hpp"
#include "features/feature_shard.hpp"
#include "runtime/rank_shard.hpp"

namespace spindle::runtime {

namespace ucx = transport::ucx;

void member_view::update(std::map<int, member_info> alive) {
  std::lock_guard lock(mu_);
  if (alive == alive_) return;
  alive_ = std::move(alive);
  version_.fetch_add(1, std::memory_order_acq_rel);
}

std::map<int, member_info> member_view::snapshot() const {
  std::lock_guard lock(mu_);
  return alive_;
}

std::string descriptor_for(const member_info& m, int epoch) {
  if (m.epoch == epoch) return m.descriptor;
  if (m.old_epoch == epoch) return m.old_descriptor;
  return {};
}

// What one placement epoch's gathers read: its plan, the regions attached for
// it, and the gatherer over them.
struct cluster_features::epoch_state {
  int epoch = 0;
  std::shared_ptr<const features::placement_plan> plan;
  std::vector<std::unique_ptr<ucx::remote_region>> regions;
  std::vector<std::unique_ptr<offset_reader>> windows;  // one per remote shard
  std::map<int, std::vector<int>> shards_of;            // rank -> its shards
  std::map<int, std::string> attached;                  // rank -> descriptor read now
  std::set<int> down;
  std::unique_ptr<features::feature_gatherer> gatherer;
};

cluster_features::cluster_features(const rank_shard& shard, const member_view& view,
                                   ucx::context ctx, ucx::worker w)
    : shard_(shard), view_(view), ctx_(std::move(ctx)), worker_(std::move(w)) {}

cluster_features::~cluster_features() = default;

namespace {

// Every shard of `plan` is this rank's or has a live owner with a region for `epoch`.
bool owners_published(const features::placement_plan& plan, int epoch, int my_rank,
                      const std::map<int, member_info>& alive) {
  for (const auto& s : plan.shards) {
    if (s.server == my_rank) continue;
    auto it = alive.find(s.server);
    if (it == alive.end() || descriptor_for(it->second, epoch).empty()) return false;
  }
  return true;
}

}  // namespace

bool cluster_features::readable(const rank_shard& shard, const std::map<int, member_info>& alive) {
  const auto e = shard.latest();
  // A rank that joined a running cluster holds no rows until it built its shard
  // of the plan that includes it.
  return e.own_rows && owners_published(*e.plan, e.epoch, shard.rank(), alive);
}

expected<std::unique_ptr<cluster_features>> cluster_features::create(
    const rank_shard& shard, const member_view& view, const std::map<int, member_info>* ready) {
  SPINDLE_ASSIGN_OR_RETURN(auto ctx, ucx::context::create());
  SPINDLE_ASSIGN_OR_RETURN(auto w, ucx::worker::create(ctx));
  std::unique_ptr<cluster_features> f(
      new cluster_features(shard, view, std::move(ctx), std::move(w)));
  const auto& ds = shard.dataset();
  f->dim_ = std::uint32_t(ds.feature_dim());
  f->accesses_ = std::make_unique<features::access_counter>(std::size_t(ds.num_nodes()));
  f->seen_version_ = view.version();
  const auto alive = ready ? *ready : view.snapshot();
  const auto latest = shard.latest();
  SPINDLE_ASSIGN_OR_RETURN(f->now_, f->attach(latest.epoch, alive));
  f->by_epoch_.push_back({latest.epoch});
  f->reading_.store(latest.epoch, std::memory_order_release);
  return f;
}

expected<std::unique_ptr<cluster_features::epoch_state>> cluster_features::attach(
    int epoch, const std::map<int, member_info>& alive) {
  const auto mine = shard_.at(epoch);
  if (!mine) return make_error(errc::unavailable, "placement epoch {} is not held here", epoch);
  auto st = std::make_unique<epoch_state>();
  st->epoch = epoch;
  st->plan = mine->plan;
  const auto& plan = *st->plan;
  const int my_rank = shard_.rank();
  std::vector<features::shard_access> access(plan.shards.size());
  // This rank's own shards, every tier, are in its region for the epoch (the rows
  // it holds for this plan), each at its slot.
  SPINDLE_ASSIGN_OR_RETURN(auto own, region_layout(plan, my_rank, dim_));
  if (!mine->own_rows)
    return make_error(errc::unavailable, "rank {} holds no region for placement epoch {}", my_rank,
                      epoch);
  for (const auto& slot : own) access[std::size_t(slot.shard)] = {mine->own_rows + slot.offset};
  std::map<int, ucx::remote_region*> region_of;
  for (std::size_t i = 0; i < plan.shards.size(); ++i) {
    const int server = plan.shards[i].server;
    st->shards_of[server].push_back(int(i));
    if (server == my_rank) continue;
    auto it = alive.find(server);
    const auto desc_text = it == alive.end() ? std::string() : descriptor_for(it->second, epoch);
    if (desc_text.empty())
      return make_error(errc::unavailable, "no live node serves shard {} (rank {}) of epoch {}", i,
                        server, epoch);
    if (!region_of.count(server)) {
      SPINDLE_ASSIGN_OR_RETURN(auto desc, ucx::region_descriptor::decode(desc_text));
      SPINDLE_ASSIGN_OR_RETURN(auto region, ucx::remote_region::attach(worker_, desc));
      region_of[server] = region.get();
      st->regions.push_back(std::move(region));
      st->attached[server] = desc_text;
    }
    SPINDLE_ASSIGN_OR_RETURN(auto* window, shard_window(*st, server, int(i), *region_of[server]));
    access[i] = {nullptr, window, 1.0};
  }
  st->gatherer = std::make_unique<features::feature_gatherer>(plan.lookup, dim_ * 4, access);
  return st;
}

expected<batched_reader*> cluster_features::shard_window(epoch_state& st, int server, int shard,
                                                         batched_reader& region) const {
  SPINDLE_ASSIGN_OR_RETURN(auto layout, region_layout(*st.plan, server, dim_));
  const auto slot = std::find_if(layout.begin(), layout.end(),
                                 [&](const region_slot& r) { return r.shard == shard; });
  if (slot == layout.end() || slot->offset + slot->bytes > region.size())
    return make_error(errc::corrupt_data,
                      "shard {} of rank {} lies outside the {} bytes that rank published for "
                      "epoch {}",
                      shard, server, region.size(), st.epoch);
  st.windows.push_back(std::make_unique<offset_reader>(region, slot->offset, slot->bytes));
  return st.windows.back().get();
}

// A newer epoch whose every owner has published its shard: read it from now on.
void cluster_features::switch_epoch(const std::map<int, member_info>& alive) {
  const auto latest = shard_.latest();
  if (latest.epoch <= now_->epoch || !latest.own_rows ||  // no rows: this rank leaves
      !owners_published(*latest.plan, latest.epoch, shard_.rank(), alive))
    return;
  auto next = attach(latest.epoch, alive);
  if (!next) {  // the epoch it reads goes on serving; the coordinator is told (problem)
    auto why = fmt::format("rank {} cannot read placement epoch {} (it reads epoch {}): {}",
                           shard_.rank(), latest.epoch, now_->epoch, next.error().to_string());
    std::lock_guard lock(problem_mu_);
    if (why != problem_) log::error("{}", why);
    problem_ = std::move(why);
    return;
  }
  {
    std::lock_guard lock(problem_mu_);
    problem_.clear();
  }
  log::info("rank {}: gathers read placement epoch {} now (was {})", shard_.rank(), latest.epoch,
            now_->epoch);
  now_ = std::move(*next);
  by_epoch_.push_back({latest.epoch});
  reading_.store(latest.epoch, std::memory_order_release);
}

// Marks the shards of members seen down unreachable; reattaches those that came back.
void cluster_features::follow_members(const std::map<int, member_info>& alive) {
  auto& st = *now_;
  for (const auto& [rank, shards] : st.shards_of) {
    if (rank == shard_.rank()) continue;
    const auto now = alive.find(rank);
    const auto desc = now == alive.end() ? std::string() : descriptor_for(now->second, st.epoch);
    if (desc.empty() && !st.down.count(rank)) {
      st.down.insert(rank);
      for (int s : shards) st.gatherer->mark_unreachable(s);
      log::warn("rank {} is down: its shards are unreachable", rank);
    } else if (!desc.empty() && (st.down.count(rank) || st.attached[rank] != desc)) {
      // It rejoined with a new region: attach it and read its shards again.
      auto d = ucx::region_descriptor::decode(desc);
      auto region = d ? ucx::remote_region::attach(worker_, *d)
                      : expected<std::unique_ptr<ucx::remote_region>>(d.error());
      if (!region) {
        log::warn("rank {} rejoined but cannot be attached: {}", rank, region.error().to_string());
        continue;
      }
      for (int s : shards) {
        auto window = shard_window(st, rank, s, **region);
        if (window)
          st.gatherer->reattach(s, {nullptr, *window, 1.0});
        else
          log::warn("rank {} rejoined: {}", rank, window.error().to_string());
      }
      st.regions.push_back(std::move(*region));
      st.attached[rank] = desc;
      st.down.erase(rank);
      log::info("rank {} rejoined: its shards are readable again", rank);
    }
  }
}

void cluster_features::apply_membership() {
  const auto v = view_.version();
  if (v == seen_version_) return;
  seen_version_ = v;
  const auto alive = view_.snapshot();
  switch_epoch(alive);
  follow_members(alive);
}

std::vector<cluster_features::epoch_rows> cluster_features::rows_by_epoch() {
  std::lock_guard lock(gather_mu_);
  return by_epoch_;
}

std::string cluster_features::problem() const {
  std::lock_guard lock(problem_mu_);
  return problem_;
}

void cluster_features::refresh() {
  std::lock_guard lock(gather_mu_);
  apply_membership();
}

serving::feature_source cluster_features::source() {
  return [this](std::span<const std::int64_t> ids, float* out) -> status {
    std::lock_guard lock(gather_mu_);
    apply_membership();
    accesses_->add(ids);
    accesses_->add_request();
    ++gathers_;
    SPINDLE_ASSIGN_OR_RETURN(
        auto rep,
        now_->gatherer->gather(ids, {reinterpret_cast<std::byte*>(out), ids.size() * dim_ * 4}));
    remote_rows_ += rep.remote_rows + rep.mapped_rows;
    local_rows_ += rep.local_rows - rep.mapped_rows;
    auto& e = by_epoch_.back();
    ++e.gathers;
    e.remote += rep.remote_rows + rep.mapped_rows;
    e.local += rep.local_rows - rep.mapped_rows;
    return status::ok();
  };
}

}  // namespace spindle::runtime
