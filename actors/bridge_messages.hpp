// Messages of the UCX bridge (docs/architecture.md "Planes"): the control atoms of the
// bridge actor, the in-process reply envelope of bridge targets, and the wire
// types that cross processes inside bridge frames (serialized with CAF's own
// binary serializer, so they carry `inspect` and are announced to the system).
#pragma once

#include <caf/all.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "actors/atoms.hpp"
#include "actors/serving_messages.hpp"
#include "core/status.hpp"
#include "serving/gnn_pipeline.hpp"

namespace spindle::actors {

/// What a bridge target answers to (bridge_call_atom, caf::message): the reply's
/// content, sent back to the caller's process as is. In-process only.
struct bridge_reply {
  caf::message content;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, bridge_reply& x) {
  return f(caf::meta::type_name("bridge_reply"), x.content);
}

/// A frame the UCX channel received (header, payload), handed to the bridge
/// actor in its own process. In-process only.
struct bridge_frame {
  std::vector<char> header, payload;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, bridge_frame& x) {
  return f(caf::meta::type_name("bridge_frame"), x.header, x.payload);
}

/// A batch of GNN requests for a pipeline in another process.
struct remote_batch {
  std::vector<serving::gnn_request> requests;
  std::int32_t executor = -1;  // the sender's routing decision (psgs_router::choice); -1: none
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, remote_batch& x) {
  return f(caf::meta::type_name("remote_batch"), x.requests, x.executor);
}

/// A pipeline's answer to a remote_batch: per-request outputs or errors. The
/// outputs travel as one byte block (float32, host order) because CAF 0.17
/// serializes a byte vector with one copy but a float vector value by value
/// (about 40 MB/s here, measured by bench/bridge_bench).
struct remote_result {
  std::vector<std::uint32_t> output_sizes;  // floats per request
  std::vector<char> output_bytes;           // every request's floats, back to back
  std::vector<std::int32_t> error_codes;    // spindle::errc per request (0 = ok)
  std::vector<std::string> error_messages;
  double sample_s = 0, gather_s = 0, compute_s = 0;
  std::int32_t executor = 0;  // psgs_router::choice
  std::uint64_t graph_version = 0;  // the version of the rank's graph it was computed on
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, remote_result& x) {
  return f(caf::meta::type_name("remote_result"), x.output_sizes, x.output_bytes, x.error_codes,
           x.error_messages, x.sample_s, x.gather_s, x.compute_s, x.executor, x.graph_version);
}

remote_batch to_wire(const batch_job& job);
remote_result to_wire(const serving::batch_result& r);
/// Fails (errc::corrupt_data) when the sizes and the byte block disagree.
expected<serving::batch_result> from_wire(remote_result r);

/// Announces the wire types; call on every actor_system_config that runs a bridge.
void add_bridge_types(caf::actor_system_config& cfg);

/// The text of an error a bridge target returned (its string context when it has one).
std::string error_text(const caf::error& e);

}  // namespace spindle::actors
