// A DLRM inference actor (one per model instance): runs a batch through
// hps::dlrm_hps_runner (lookups through the node's lookup session, then
// the dense model). Spawned detached because it computes and may block on the
// VDB/PDB; several instances share one session.
#pragma once

#include <caf/all.hpp>

#include "actors/hps_messages.hpp"

namespace spindle::actors {

/// `model` and `session` must outlive the actor; errors come in the reply,
/// never as a failed request.
dlrm_inference_actor spawn_dlrm_inference(caf::actor_system& sys, const nn::model& model,
                                std::shared_ptr<hps::lookup_session> session);

/// One batch through `runner` (the actor's work, also what a recommendation
/// model's worker-pool workers run): errors in the reply.
dlrm_reply run_dlrm_batch(const hps::rec_runner& runner, const nn::model& model,
                          const dlrm_request& req);

}  // namespace spindle::actors
