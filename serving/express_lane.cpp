#include "serving/express_lane.hpp"

namespace spindle::serving {

express_lane::express_lane(const graph::dataset& ds, const nn::model& model,
                           const psgs_router& router, thread_pool& pool, limits l)
    : ds_(ds), router_(router), limits_(l), max_requests_(l.max_requests),
      pipeline_(std::make_unique<gnn_pipeline>(ds, model, router, pool)) {}

std::optional<psgs_router::choice> express_lane::route_of(
    const std::vector<gnn_request>& batch) const {
  if (batch.empty() || batch.size() > max_requests()) return std::nullopt;
  std::size_t seeds = 0;
  double psgs = 0;
  for (const auto& r : batch) {
    seeds += r.seeds.size();
    psgs += summed_psgs(ds_, r);
  }
  if (seeds > limits_.max_seeds) return std::nullopt;
  const auto choice = router_.route(psgs);
  // Where the pipelines would run it on a GPU, it is theirs: the lane's executors
  // are the host's, and the answer would differ from theirs in the last bits.
  if (limits_.device_routed && choice != psgs_router::choice::small) return std::nullopt;
  return choice;
}

std::optional<batch_result> express_lane::try_run(const std::vector<gnn_request>& batch,
                                                  std::size_t entered, bool counted) {
  if (!work_conserving_.load(std::memory_order_relaxed)) return std::nullopt;
  if (outstanding_.load() != std::int64_t(entered)) return std::nullopt;
  const auto choice = route_of(batch);  // routed once, as a pipeline routes it
  if (!choice) return std::nullopt;
  std::unique_lock lock(mu_, std::try_to_lock);
  if (!lock.owns_lock() || !pipeline_) return std::nullopt;
  auto res = pipeline_->run(batch, *choice);
  if (counted) {
    batches_.fetch_add(1, std::memory_order_relaxed);
    requests_.fetch_add(batch.size(), std::memory_order_relaxed);
    if (res.executor == psgs_router::choice::large) large_.fetch_add(1, std::memory_order_relaxed);
  }
  return res;
}

status express_lane::set_fanouts(std::vector<int> fanouts) {
  std::lock_guard lock(mu_);
  return pipeline_ ? pipeline_->set_fanouts(std::move(fanouts)) : status::ok();
}

void express_lane::close() {
  std::lock_guard lock(mu_);
  pipeline_.reset();
}

}  // namespace spindle::serving
