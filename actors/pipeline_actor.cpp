#include "actors/pipeline_actor.hpp"

#include <pthread.h>

#include <map>

#include "actors/bridge_messages.hpp"
#include "colocation/task_bytes.hpp"
#include "core/log.hpp"
#include "core/thread_priority.hpp"

namespace spindle::actors {
namespace {

// A batch whose forward pass waits in (or runs on) the device scheduler.
struct waiting_batch {
  caf::typed_response_promise<serving::batch_result> promise;
  std::shared_ptr<serving::prepared_batch> prepared;
  std::shared_ptr<const std::vector<serving::gnn_request>> requests;
  std::chrono::steady_clock::time_point submitted;
};

struct pipeline_state {
  std::unique_ptr<serving::gnn_pipeline> pipeline;
  bool told_small = false;  // warned once: rank 0 sends this GPU rank host batches
  colocation::device_scheduler* device = nullptr;
  std::map<std::uint64_t, waiting_batch> waiting;
  std::uint64_t next_id = 0;
};

using pipeline_ptr = local_pipeline_actor::stateful_pointer<pipeline_state>;

// GNNSched: sample and gather here, then hand the forward pass to the device
// scheduler and return; the pipeline takes its next batch while the pass
// waits for its group, and answers when the scheduler reports back.
caf::typed_response_promise<serving::batch_result> submit_gated(pipeline_ptr self,
                                                                const batch_job& job) {
  auto& st = self->state;
  auto requests = std::make_shared<const std::vector<serving::gnn_request>>(job.requests);
  std::shared_ptr<serving::prepared_batch> pb = st.pipeline->prepare(*requests);
  auto rp = self->make_response_promise<serving::batch_result>();
  const auto id = st.next_id++;
  st.waiting.emplace(id, waiting_batch{rp, pb, requests, std::chrono::steady_clock::now()});
  const serving::gnn_pipeline* pipe = st.pipeline.get();
  auto me = caf::actor_cast<caf::actor>(self);
  st.device->submit(
      colocation::task_bytes(*pipe, *pb), pipe->qos_target(),
      [pipe, pb, requests](gpu::pool_slot slot) {
        pipe->compute(*pb, *requests, slot);
        return status::ok();
      },
      [me, id](status s) {
        caf::anon_send(me, gnnsched_done_atom::value, id, std::int32_t(s.code()), s.message());
      });
  return rp;
}

void finish_gated(pipeline_ptr self, std::uint64_t id, std::int32_t code,
                  const std::string& message) {
  auto& st = self->state;
  auto it = st.waiting.find(id);
  if (it == st.waiting.end()) return;
  auto w = std::move(it->second);
  st.waiting.erase(it);
  auto& res = w.prepared->result;
  if (code != 0) {
    const auto err = make_error(errc(code), "{}", message);
    for (std::size_t k = 0; k < w.prepared->used; ++k)
      if (w.prepared->groups[k].ready)
        for (auto m : w.prepared->groups[k].members) res.errors[m] = err;
  }
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - w.submitted).count();
  res.times.compute_s += took;
  st.pipeline->record_pass(took);
  w.promise.deliver(std::move(res));
}

local_pipeline_actor::behavior_type pipeline_behavior(pipeline_ptr self, const graph::dataset* ds, const nn::model* model,
                             const serving::psgs_router* router, thread_pool* pool,
                             serving::feature_source features, colocation::device_scheduler* device,
                             std::shared_ptr<serving::batch_executor> large) {
  pthread_setname_np(pthread_self(), "spindle-pipe");  // detached: this thread is the actor's
  lower_to_compute_priority();
  self->state.pipeline = std::make_unique<serving::gnn_pipeline>(
      *ds, *model, *router, *pool, std::move(features), std::move(large));
  self->state.device = device;
  return {
      [=](run_atom, const batch_job& job) -> caf::result<serving::batch_result> {
        if (self->state.device) return submit_gated(self, job);
        return self->state.pipeline->run(job.requests);
      },
      [=](fanouts_atom, const std::vector<int>& fanouts) {
        if (auto st = self->state.pipeline->set_fanouts(fanouts); !st)
          log::warn("pipeline: {}", st.message());  // the gateway checked it first
      },
      [=](gnnsched_done_atom, std::uint64_t id, std::int32_t code, const std::string& message) {
        finish_gated(self, id, code, message);
      },
      // A batch from another process, through the UCX bridge.
      [=](bridge_call_atom, const caf::message& m) -> caf::result<bridge_reply> {
        if (!m.match_elements<run_atom, remote_batch>())
          return caf::make_error(caf::sec::runtime_error,
                                 "pipeline: expected (run, remote_batch), got " + to_string(m));
        const auto& rb = m.get_as<remote_batch>(1);
        // The sender's router decided the executor (one routing policy for the
        // whole cluster, changed live on the coordinator); -1 routes here.
        if (rb.executor != -1 && rb.executor != 0 && rb.executor != 1)
          return caf::make_error(caf::sec::runtime_error,
                                 "pipeline: executor " + std::to_string(rb.executor) +
                                     " is not 0 (small), 1 (large) or -1 (route here)");
        // A rank with a GPU fed by a coordinator that routes to the host: said once,
        // since its GPU then serves only its own door's batches.
        if (rb.executor == 0 && self->state.pipeline->device() && !self->state.told_small) {
          self->state.told_small = true;
          log::warn("pipeline: rank 0 routes the batches it hands this GPU rank to the host's "
                    "small executor (its router has no GPU: give it --device cuda, or "
                    "--calibrate it); this rank's GPU serves its own door's batches only");
        }
        auto res = rb.executor < 0 ? self->state.pipeline->run(rb.requests)
                                   : self->state.pipeline->run(
                                         rb.requests, serving::psgs_router::choice(rb.executor));
        return bridge_reply{caf::make_message(to_wire(res))};
      },
  };
}

}  // namespace

local_pipeline_actor spawn_pipeline(caf::actor_system& sys, const graph::dataset& ds,
                                    const nn::model& model, const serving::psgs_router& router,
                                    thread_pool& pool, serving::feature_source features,
                                    colocation::device_scheduler* device,
                                    std::shared_ptr<serving::batch_executor> large) {
  return sys.spawn<caf::detached>(pipeline_behavior, &ds, &model, &router, &pool, std::move(features),
                                  device, std::move(large));
}

}  // namespace spindle::actors
