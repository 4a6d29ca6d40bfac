// How a served model's admitted calls reach its forward pass: one interface per
// model kind, one implementation per way of running it. The gateway finds the
// model, checks and admits the call, then hands it to the model's scheduler,
// which answers it exactly once and completes its admission. Implementations:
// schedulers.cpp (the GNN batcher actor; a recommendation model's inference
// actors, or the server a model is forwarded to) and rec_batcher.cpp (the
// worker pool's dynamic batcher). The SplitRPC tensor path is split_path.
#pragma once

#include <caf/all.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string_view>

#include "actors/serving_messages.hpp"
#include "serving/express_lane.hpp"
#include "transport/rpc/rpc_types.hpp"

namespace spindle::actors {
struct gnn_model_binding;
struct rec_model_binding;
}  // namespace spindle::actors

namespace spindle::actors::detail {

struct gnn_entry;
struct rec_entry;

template <class Entry, class Call, class Answer>
class model_scheduler {
 public:
  virtual ~model_scheduler() = default;
  /// What runs the calls, as stats show it ("batcher", "dynamic_batcher", ...).
  virtual std::string_view kind() const = 0;
  /// Runs an admitted call of `e`'s model; `done` is called once, on any thread.
  virtual void submit(std::shared_ptr<Entry> e, Call call, std::function<void(Answer)> done) = 0;
};

using gnn_scheduler =
    model_scheduler<gnn_entry, transport::rpc::gnn_call, transport::rpc::gnn_answer>;
using rec_scheduler =
    model_scheduler<rec_entry, transport::rpc::rec_call, transport::rpc::rec_answer>;

/// The forwarder actor's behavior: it hands requests to serving actors and
/// their replies to the callbacks (it never blocks; it lives on CAF's scheduler).
caf::behavior gateway_forwarder(caf::event_based_actor* self);

/// One request to a GNN batcher actor through `forwarder`; `done` gets the
/// reply or the actor error (on a CAF thread, or on this one when `express`, the
/// model's lane or null, runs it to completion). `timeout` may be caf::infinite.
void dispatch_gnn(const caf::actor& forwarder, const batcher_actor& batcher,
                  serving::express_lane* express, serving::gnn_request request,
                  caf::duration timeout,
                  std::function<void(const gnn_reply*, const caf::error*)> done);

/// While held (a door's turn, rpc_service::begin_turn), the GNN calls this
/// thread dispatches without a deadline wait; released, each batcher gets them
/// in one message, or the model's express lane runs them here when it is idle.
void hold_gnn_sends();
void release_gnn_sends();

/// The scheduler for `b`: its batcher actor, reached through `forwarder`.
std::unique_ptr<gnn_scheduler> make_gnn_scheduler(const gnn_model_binding& b,
                                                  caf::actor forwarder);
/// The scheduler for `b`: forwarding when it has `forward`, the worker pool's
/// dynamic batcher when it has a pool, otherwise its inference actors in turn.
std::unique_ptr<rec_scheduler> make_rec_scheduler(const rec_model_binding& b,
                                                  caf::actor forwarder);
/// The worker pool's dynamic batcher (rec_batcher.cpp).
std::unique_ptr<rec_scheduler> make_pool_batcher();

}  // namespace spindle::actors::detail
