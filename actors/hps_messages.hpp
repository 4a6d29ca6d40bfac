// Messages and typed interfaces of the recommendation serving path (HugeCTR
// HPS): the DLRM request and reply of the dlrm_inference actors, and what the
// embedding_cache (refresh, hit-rate threshold, stats) and updater actors answer.
// In-process only: bulk bytes (dense features, bags) never cross processes here.
#pragma once

#include <caf/all.hpp>

#include "actors/atoms.hpp"
#include "actors/serving_messages.hpp"
#include "hps/dlrm_hps.hpp"
#include "hps/updates/update_stream.hpp"

namespace spindle::actors {

/// One batch for a DLRM: dense [batch x dense_in] and one bag list per table.
struct dlrm_request {
  std::int64_t batch = 0;
  std::vector<float> dense;
  std::vector<nn::sparse_input> sparse;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, dlrm_request& x) {
  return f(caf::meta::type_name("dlrm_request"), x.batch, x.dense, x.sparse);
}

/// Click probabilities per sample, or the error naming the fault.
struct dlrm_reply {
  std::vector<float> scores;
  status error;  // ok, or the fault by code and message
  hps::dlrm_timing timing;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, dlrm_reply& x) {
  return f(caf::meta::type_name("dlrm_reply"), x.scores, x.error, x.timing);
}

/// Per-table counters of the node's lookup session, in table order.
struct hps_stats {
  std::vector<std::string> tables;
  std::vector<hps::table_stats> stats;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, hps_stats& x) {
  return f(caf::meta::type_name("hps_stats"), x.tables, x.stats);
}

/// A model instance: one batch in, its scores (or the error naming the fault) out.
using dlrm_inference_actor = caf::typed_actor<
    caf::replies_to<dlrm_atom, dlrm_request>::with<dlrm_reply>>;

/// The owner of a node's lookup session: refreshes (on its timer or on command;
/// the count of vectors rewritten), a table's hit-rate threshold (false for an
/// unknown table), the per-table counters.
using embedding_cache_actor = caf::typed_actor<
    caf::reacts_to<tick_atom>, caf::replies_to<refresh_atom>::with<std::uint64_t>,
    caf::replies_to<threshold_atom, std::string, double>::with<bool>,
    caf::replies_to<hps_stats_atom>::with<hps_stats>>;

/// One member of the update consumer group: polls itself, reports its counters.
using updater_actor = caf::typed_actor<caf::reacts_to<poll_atom>,
                                       caf::replies_to<hps_stats_atom>::with<hps::consumer_stats>>;

}  // namespace spindle::actors
