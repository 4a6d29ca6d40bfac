// Messages of the recommendation serving path (HugeCTR HPS): the DLRM request
// and reply exchanged with dlrm_inference actors, and the control atoms of the
// embedding_cache (refresh, hit-rate threshold, stats) and updater actors.
// In-process only: bulk bytes (dense features, bags) never cross processes here.
#pragma once

#include <caf/all.hpp>

#include "actors/serving_messages.hpp"
#include "hps/dlrm_hps.hpp"
#include "hps/updates/update_stream.hpp"

namespace spindle::actors {

using dlrm_atom = caf::atom_constant<caf::atom("dlrm")>;
using refresh_atom = caf::atom_constant<caf::atom("refresh")>;
using poll_atom = caf::atom_constant<caf::atom("poll")>;
using hps_stats_atom = caf::atom_constant<caf::atom("hpsstats")>;

/// One batch for a DLRM: dense [batch x dense_in] and one bag list per table.
struct dlrm_request {
  std::int64_t batch = 0;
  std::vector<float> dense;
  std::vector<nn::sparse_input> sparse;
};

/// Click probabilities per sample, or the error naming the fault.
struct dlrm_reply {
  std::vector<float> scores;
  status error;  // ok, or the fault by code and message
  hps::dlrm_timing timing;
};

/// Per-table counters of the node's lookup session, in table order.
struct hps_stats {
  std::vector<std::string> tables;
  std::vector<hps::table_stats> stats;
};

}  // namespace spindle::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spindle::actors::dlrm_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spindle::actors::dlrm_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(spindle::actors::hps_stats)
