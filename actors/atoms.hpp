// Every CAF atom the actors send, in one list (CAF 0.17 atoms are at most ten
// characters and equal by their text: one list keeps each text meaning one thing).
#pragma once

#include <caf/all.hpp>

namespace spindle::actors {

// Serving (serving_messages.hpp): calls, batches, stats and live settings.
using infer_atom = caf::atom_constant<caf::atom("infer")>;
using flush_atom = caf::atom_constant<caf::atom("flush")>;
using run_atom = caf::atom_constant<caf::atom("run")>;
using stats_atom = caf::atom_constant<caf::atom("stats")>;
using policy_atom = caf::atom_constant<caf::atom("policy")>;
/// (fanouts_atom, std::vector<int>): sample with these fanouts from the next
/// batch on (batcher: passed to its pipelines in this process).
using fanouts_atom = caf::atom_constant<caf::atom("fanouts")>;
/// A periodic self-message (an actor's own timer).
using tick_atom = caf::atom_constant<caf::atom("tick")>;
/// A live threshold change (PSGS routing point, drift, cache hit rate).
using threshold_atom = caf::atom_constant<caf::atom("threshold")>;
/// (pipeline_down_atom, pipeline, bool down): the pipeline's process died or came back.
using pipeline_down_atom = caf::atom_constant<caf::atom("pipedown")>;
/// GNNSched reporting a forward pass it ran: (id, errc code, message).
using gnnsched_done_atom = caf::atom_constant<caf::atom("gsdone")>;
/// A load client's end (load_client.hpp).
using done_atom = caf::atom_constant<caf::atom("done")>;

// The bridge between processes (bridge_messages.hpp).
using forward_atom = caf::atom_constant<caf::atom("forward")>;
using bridge_call_atom = caf::atom_constant<caf::atom("bcall")>;
using register_atom = caf::atom_constant<caf::atom("register")>;
using peer_atom = caf::atom_constant<caf::atom("peer")>;
using peer_down_atom = caf::atom_constant<caf::atom("peerdown")>;
using inbound_atom = caf::atom_constant<caf::atom("inbound")>;
using expire_atom = caf::atom_constant<caf::atom("expire")>;

// The parameter server's actors (hps_messages.hpp).
using dlrm_atom = caf::atom_constant<caf::atom("dlrm")>;
using refresh_atom = caf::atom_constant<caf::atom("refresh")>;
using poll_atom = caf::atom_constant<caf::atom("poll")>;
using hps_stats_atom = caf::atom_constant<caf::atom("hpsstats")>;

// Cluster membership and placement (node_actor.hpp, placement_actor.hpp).
using join_atom = caf::atom_constant<caf::atom("join")>;
using status_atom = caf::atom_constant<caf::atom("status")>;
using ok_atom = caf::atom_constant<caf::atom("ok")>;
using ready_atom = caf::atom_constant<caf::atom("ready")>;
using shard_atom = caf::atom_constant<caf::atom("shard")>;
using retire_atom = caf::atom_constant<caf::atom("retire")>;
using reading_atom = caf::atom_constant<caf::atom("reading")>;
using plan_atom = caf::atom_constant<caf::atom("plan")>;
using models_atom = caf::atom_constant<caf::atom("models")>;
using replan_atom = caf::atom_constant<caf::atom("replan")>;
using rows_atom = caf::atom_constant<caf::atom("rows")>;
using leave_atom = caf::atom_constant<caf::atom("leave")>;

}  // namespace spindle::actors
