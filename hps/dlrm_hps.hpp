// DLRM inference whose embedding tables are served by the hierarchical
// parameter server: each table's lookups go through the lookup session
// (L1 cache -> VDB -> PDB), bags are pooled by sum, and the dense part of the
// model runs as usual (nn::model::forward_dlrm_pooled). Table t of the model is
// the session's table "emb<t>" (what `spindle hps load --model` writes).
// Thread-safety: infer() may run on several threads (the session is thread-safe).
#pragma once

#include <vector>

#include "hps/lookup_session.hpp"
#include "hps/rec_runner.hpp"
#include "nn/model.hpp"

namespace spindle::hps {

/// Sums the rows of each bag: out[b] = sum of rows[offsets[b] .. offsets[b+1]).
void pool_bags(std::span<const float> rows, std::uint32_t dim,
               std::span<const std::int64_t> offsets, std::span<float> out);

class dlrm_hps_runner final : public rec_runner {
 public:
  /// `model` (a DLRM, loaded with external embeddings) and `session` must outlive
  /// the runner; every model table must be a session table of the same width.
  static expected<dlrm_hps_runner> create(const nn::model& model, lookup_session& session);

  /// Click probabilities [B x 1] for dense [B x dense_in] and one bag list per
  /// table; indices must lie in [0, table rows) (errors name the table and position).
  expected<nn::tensor> infer(nn::allocator& a, const nn::tensor& dense,
                             const std::vector<nn::sparse_input>& sparse,
                             dlrm_timing* timing = nullptr) const override;

 private:
  dlrm_hps_runner(const nn::model& m, lookup_session& s, std::vector<std::size_t> tables)
      : model_(&m), session_(&s), tables_(std::move(tables)) {}
  status check(const nn::sparse_input& in, std::size_t t, std::int64_t batch) const;

  const nn::model* model_;
  lookup_session* session_;
  std::vector<std::size_t> tables_;  // session index of model table t
};

}  // namespace spindle::hps
