#include "apps/commands/cluster_features.hpp"

#include "core/log.hpp"
#include "embedding/feature_shard.hpp"

namespace spindle::apps {

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

cluster_features::cluster_features(const sched::placement_plan& plan, const member_view& view,
                                   ucx::context ctx, ucx::worker w)
    : plan_(plan), view_(view), ctx_(std::move(ctx)), worker_(std::move(w)) {}

expected<std::unique_ptr<cluster_features>> cluster_features::create(
    const graph::dataset& ds, const sched::placement_plan& plan, int my_rank,
    const std::byte* own_host_rows, const member_view& view) {
  SPINDLE_ASSIGN_OR_RETURN(auto ctx, ucx::context::create());
  SPINDLE_ASSIGN_OR_RETURN(auto w, ucx::worker::create(ctx));
  std::unique_ptr<cluster_features> f(
      new cluster_features(plan, view, std::move(ctx), std::move(w)));
  SPINDLE_TRY(f->attach_all(ds, my_rank, own_host_rows));
  return f;
}

status cluster_features::attach_all(const graph::dataset& ds, int my_rank,
                                    const std::byte* own_host_rows) {
  my_rank_ = my_rank;
  dim_ = std::uint32_t(ds.feature_dim());
  accesses_ = std::make_unique<sched::access_counter>(std::size_t(ds.num_nodes()));
  seen_version_ = view_.version();
  const auto members = view_.snapshot();
  std::vector<embedding::shard_access> access(plan_.shards.size());
  bool host_taken = false;
  std::map<int, ucx::remote_region*> region_of;
  for (std::size_t i = 0; i < plan_.shards.size(); ++i) {
    const int server = plan_.shards[i].server;
    shards_of_[server].push_back(int(i));
    if (server == my_rank) {
      if (plan_.shards[i].tier == sched::shard_tier::host && own_host_rows && !host_taken) {
        access[i] = {own_host_rows, nullptr, 0.0};
        host_taken = true;
        continue;
      }
      auto& copy = copies_.emplace_back(
          embedding::shard_bytes(plan_.lookup.shard_row_count(sched::shard_index(i)), dim_));
      SPINDLE_TRY(
          embedding::fill_shard(plan_.lookup, sched::shard_index(i), ds.features(), dim_, copy));
      access[i] = {copy.data(), nullptr, 0.0};
      continue;
    }
    auto it = members.find(server);
    if (it == members.end() || it->second.descriptor.empty())
      return make_error(errc::unavailable, "no live node serves shard {} (rank {})", i, server);
    if (!region_of.count(server)) {
      SPINDLE_ASSIGN_OR_RETURN(auto desc, ucx::region_descriptor::decode(it->second.descriptor));
      SPINDLE_ASSIGN_OR_RETURN(auto region, ucx::remote_region::attach(worker_, desc));
      region_of[server] = region.get();
      regions_.push_back(std::move(region));
      attached_[server] = it->second.descriptor;
    }
    access[i] = {nullptr, region_of[server], 1.0};
  }
  gatherer_ = std::make_unique<embedding::feature_gatherer>(plan_.lookup, dim_ * 4, access);
  return status::ok();
}

void cluster_features::apply_membership() {
  const auto v = view_.version();
  if (v == seen_version_) return;
  seen_version_ = v;
  const auto alive = view_.snapshot();
  for (const auto& [rank, shards] : shards_of_) {
    if (rank == my_rank_) continue;
    const auto now = alive.find(rank);
    const bool gone = now == alive.end() || now->second.descriptor.empty();
    if (gone && !down_.count(rank)) {
      down_.insert(rank);
      for (int shard : shards) gatherer_->mark_unreachable(shard);
      log::warn("rank {} is down: its shards are unreachable", rank);
    } else if (!gone && (down_.count(rank) || attached_[rank] != now->second.descriptor)) {
      // It rejoined with a new region: attach it and read its shards again.
      auto desc = ucx::region_descriptor::decode(now->second.descriptor);
      auto region = desc ? ucx::remote_region::attach(worker_, *desc)
                         : expected<std::unique_ptr<ucx::remote_region>>(desc.error());
      if (!region) {
        log::warn("rank {} rejoined but cannot be attached: {}", rank, region.error().to_string());
        continue;
      }
      for (int shard : shards) gatherer_->reattach(shard, {nullptr, region->get(), 1.0});
      regions_.push_back(std::move(*region));
      attached_[rank] = now->second.descriptor;
      down_.erase(rank);
      log::info("rank {} rejoined: its shards are readable again", rank);
    }
  }
}

sched::feature_source cluster_features::source() {
  return [this](std::span<const std::int64_t> ids, float* out) -> status {
    apply_membership();
    accesses_->add(ids);
    ++gathers_;
    SPINDLE_ASSIGN_OR_RETURN(auto rep, gatherer_->gather(ids, {reinterpret_cast<std::byte*>(out),
                                                               ids.size() * dim_ * 4}));
    remote_rows_ += rep.remote_rows + rep.mapped_rows;
    local_rows_ += rep.local_rows - rep.mapped_rows;
    return status::ok();
  };
}

}  // namespace spindle::apps
