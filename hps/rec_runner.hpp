// What a recommendation model's worker runs per batch: click probabilities for
// a batch of dense features and per-table bags. Two runners: the tables held
// by the parameter server's hierarchy (dlrm_hps_runner, DLRM), or in the
// model's own memory (memory_rec_runner: DLRM, NCF, Wide & Deep, DIN).
// Thread-safety: infer() may run on several threads at once.
#pragma once

#include <vector>

#include "hps/lookup_session.hpp"
#include "nn/model.hpp"

namespace spindle::hps {

/// Where one recommendation batch spent its time (lookups: parameter server only).
struct dlrm_timing {
  double lookup_ms = 0, compute_ms = 0;
  std::vector<lookup_report> tables;
};

/// Field list for CAF's inspectors; a template, so this header needs no CAF.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, dlrm_timing& x) {
  return f(x.lookup_ms, x.compute_ms, x.tables);
}

class rec_runner {
 public:
  virtual ~rec_runner() = default;
  /// Click probabilities [B x 1] for dense [B x dense_in] and one bag list per
  /// table; a bad index or shape is an error naming the table.
  virtual expected<nn::tensor> infer(nn::allocator& a, const nn::tensor& dense,
                                     const std::vector<nn::sparse_input>& sparse,
                                     dlrm_timing* timing = nullptr) const = 0;
};

/// Runs nn::model::forward_rec with the tables in the model's memory.
class memory_rec_runner final : public rec_runner {
 public:
  /// `model` (loaded with its tables) must outlive the runner.
  explicit memory_rec_runner(const nn::model& model) : model_(&model) {}
  expected<nn::tensor> infer(nn::allocator& a, const nn::tensor& dense,
                             const std::vector<nn::sparse_input>& sparse,
                             dlrm_timing* timing = nullptr) const override;

 private:
  const nn::model* model_;
};

}  // namespace spindle::hps
