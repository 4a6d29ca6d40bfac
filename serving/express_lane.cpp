#include "serving/express_lane.hpp"

namespace spindle::serving {

express_lane::express_lane(const graph::dataset& ds, const nn::model& model,
                           const psgs_router& router, thread_pool& pool, limits l)
    : ds_(ds), router_(router), limits_(l), max_requests_(l.max_requests),
      pipeline_(std::make_unique<gnn_pipeline>(ds, model, router, pool)) {}

bool express_lane::fits(const std::vector<gnn_request>& batch) const {
  if (batch.empty() || batch.size() > max_requests()) return false;
  std::size_t seeds = 0;
  double psgs = 0;
  for (const auto& r : batch) {
    seeds += r.seeds.size();
    psgs += summed_psgs(ds_, r);
  }
  if (seeds > limits_.max_seeds) return false;
  // Where the pipelines would run it on a GPU, it is theirs: the lane's executors
  // are the host's, and the answer would differ from theirs in the last bits.
  return !limits_.device_routed || router_.route(psgs) == psgs_router::choice::small;
}

std::optional<batch_result> express_lane::try_run(const std::vector<gnn_request>& batch,
                                                  std::size_t entered, bool counted) {
  if (!work_conserving_.load(std::memory_order_relaxed)) return std::nullopt;
  if (outstanding_.load() != std::int64_t(entered) || !fits(batch)) return std::nullopt;
  std::unique_lock lock(mu_, std::try_to_lock);
  if (!lock.owns_lock() || !pipeline_) return std::nullopt;
  // Beside GPU pipelines the lane took it as a small batch (fits): it runs as
  // one, whatever the router's threshold says by now.
  auto res = limits_.device_routed ? pipeline_->run(batch, psgs_router::choice::small)
                                   : pipeline_->run(batch);
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
