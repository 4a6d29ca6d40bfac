// The gateway's graph updates: Admin.updateGraph applies a batch to the served
// dataset's live graph (durable in its log before it answers), graphVersion
// reads it, and a call's min_version is checked against it.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "actors/gateway.hpp"
#include "actors/gateway_state.hpp"
#include "core/call_origin.hpp"

namespace spindle::actors {

using transport::rpc::graph_edit_answer;
using transport::rpc::rpc_status;

namespace {

constexpr const char* kNoUpdates =
    "this server takes no graph updates (start `spindle serve` with --graph-updates, or "
    "`spindle node` with --graph-updates --graph-stream; --device cuda servers refuse them)";

rpc_status status_of(const status& s) {
  switch (s.code()) {
    case errc::invalid_argument: return rpc_status::bad_request;
    case errc::io_error:
    case errc::unavailable: return rpc_status::unavailable;
    default: return rpc_status::internal;
  }
}

// How long a call without a deadline waits for its min_version.
constexpr std::int64_t kVersionWaitUs = 1'000'000;

}  // namespace

transport::rpc::gnn_answer detail::version_unmet(const graph::live_graph* live, std::uint64_t min,
                                                 std::uint32_t waited_us) {
  if (!live)
    return {rpc_status::bad_request,
            fmt::format("min_version {}: {}", min, kNoUpdates)};
  const auto now = live->version();
  if (now < min)
    return {rpc_status::unavailable,
            fmt::format("graph version {} is not applied here after waiting {:.0f} ms (the "
                        "call's deadline, or 1 s without one): this server is at version {}",
                        min, waited_us / 1e3, now)};
  return {};
}

void gateway::wait_for_version(transport::rpc::gnn_call call,
                               std::function<void(gnn_answer)> done) {
  using clock = graph::version_waiters::clock;
  const auto started = clock::now();
  const auto wait = call.deadline_us > 0 ? std::chrono::microseconds(call.deadline_us)
                                         : std::chrono::microseconds(kVersionWaitUs);
  s_->live->when_version(
      call.min_version, started + wait,
      [this, started, call = std::move(call), done = std::move(done)](bool) mutable {
        if (call.deadline_us > 0) {  // the wait spent part of the call's deadline
          const auto spent = std::chrono::duration_cast<std::chrono::microseconds>(
              clock::now() - started);
          call.deadline_us = std::uint32_t(std::max<std::int64_t>(
              1, std::int64_t(call.deadline_us) - spent.count()));
        }
        call.version_wait_us = std::uint32_t(std::chrono::duration_cast<std::chrono::microseconds>(
                                                 clock::now() - started)
                                                 .count());
        infer_gnn_now(std::move(call), std::move(done));  // refused there if still unmet
      });
}

std::size_t detail::graph_door_of(const std::string& origin) {
  const std::string_view first = std::string_view(origin).substr(0, origin.find(' '));
  for (std::size_t i = 0; i + 1 < kGraphDoors.size(); ++i)
    if (first == kGraphDoors[i]) return i;
  return kGraphDoors.size() - 1;
}

void gateway::set_live_graph(graph::live_graph* g, bool doors_update) {
  s_->live = g;
  s_->doors_update = doors_update;
}

void gateway::set_graph_stream(std::function<graph::stream_follow_stats()> stats) {
  s_->graph_stream = std::move(stats);
}

graph_edit_answer gateway::update_graph(transport::rpc::graph_edit edit) {
  if (!s_->live) return {rpc_status::unavailable, kNoUpdates};
  if (!s_->doors_update)
    return {rpc_status::bad_request,
            "cluster ranks take graph updates from their Redis Stream only (node "
            "--graph-stream), so that every rank applies them in one order: append the batch "
            "there (`spindle client graph update --redis HOST:PORT ...`)",
            s_->live->version(), s_->live->current()->num_nodes, {}};
  edit.source_stream.clear();  // only a stream follower names a source
  edit.source_id.clear();
  const std::size_t door = detail::graph_door_of(call_origin());
  const bool typed = !s_->live->options().node_types.empty();
  if (typed && std::string_view(detail::kGraphDoors[door]) == "grpc") {
    ++s_->graph_refused;
    ++s_->graph_by_door[door][1];
    return {rpc_status::bad_request,
            "KServe gRPC GraphUpdate: the graph is typed, and this door's batches carry no node "
            "or edge types: send typed batches through the Python client (Cap'n Proto "
            "updateGraph), POST /v2/graph/update or `spindle client graph update --edge-type ...`",
            s_->live->version(), s_->live->current()->num_nodes, {}};
  }
  auto r = s_->live->apply(edit);
  if (!r) {
    ++s_->graph_refused;
    ++s_->graph_by_door[detail::graph_door_of(call_origin())][1];
    return {status_of(r.error()), r.error().message(), s_->live->version(),
            s_->live->current()->num_nodes, {}};
  }
  ++s_->graph_updates;
  ++s_->graph_by_door[detail::graph_door_of(call_origin())][0];
  return {rpc_status::ok, {}, r->version, s_->live->current()->num_nodes, std::move(r->new_ids)};
}

graph_edit_answer gateway::graph_version() {
  if (!s_->live) return {rpc_status::unavailable, kNoUpdates};
  const auto d = s_->live->current();
  return {rpc_status::ok, {}, d->version, d->num_nodes, {}};
}

}  // namespace spindle::actors
