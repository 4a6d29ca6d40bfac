// A stand-in GNN pipeline for the actor tests: it holds every batch until told
// (ok_atom) to answer the ones it holds; each request's output is its sampler
// seed. `taken` counts the batches it received.
#pragma once

#include <atomic>
#include <memory>
#include <utility>
#include <vector>

#include "actors/batcher_actor.hpp"

namespace spindle::actors::testing {

struct held_batches {
  std::vector<std::pair<batch_job, caf::response_promise>> held;
};

inline caf::behavior holding_pipeline(caf::stateful_actor<held_batches>* self,
                                      std::shared_ptr<std::atomic<int>> taken) {
  return {
      [=](run_atom, const batch_job& job) {
        ++*taken;
        auto rp = self->make_response_promise();
        self->state.held.emplace_back(job, rp);
        return rp;
      },
      [=](fanouts_atom, const std::vector<int>&) {},
      [=](ok_atom) {
        for (auto& [job, rp] : self->state.held) {
          serving::batch_result r;
          for (const auto& q : job.requests) {
            r.outputs.push_back({float(q.sampler_seed)});
            r.errors.push_back(status::ok());
          }
          rp.deliver(std::move(r));
        }
        self->state.held.clear();
      },
  };
}

/// A batcher over one holding pipeline (batches of up to `max_batch` calls, PSGS
/// 1 a call), and that pipeline.
struct held_batcher {
  caf::actor pipeline;
  batcher_actor batcher;
};

inline held_batcher batcher_on_holding_pipeline(caf::actor_system& sys,
                                                std::shared_ptr<std::atomic<int>> taken,
                                                std::size_t max_batch) {
  auto pipe = sys.spawn(holding_pipeline, std::move(taken));
  serving::batch_policy bp;
  bp.max_batch = max_batch;
  auto batcher = spawn_batcher(sys, {caf::actor_cast<pipeline_actor>(pipe)}, bp, nullptr,
                               [](const serving::gnn_request&) { return 1.0; });
  return {std::move(pipe), std::move(batcher)};
}

}  // namespace spindle::actors::testing
