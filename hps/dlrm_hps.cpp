#include "hps/dlrm_hps.hpp"

#include <chrono>

namespace spindle::hps {

void pool_bags(std::span<const float> rows, std::uint32_t dim,
               std::span<const std::int64_t> offsets, std::span<float> out) {
  std::fill(out.begin(), out.end(), 0.0f);
  for (std::size_t b = 0; b + 1 < offsets.size(); ++b) {
    float* dst = out.data() + b * dim;
    for (std::int64_t i = offsets[b]; i < offsets[b + 1]; ++i) {
      const float* src = rows.data() + std::size_t(i) * dim;
      for (std::uint32_t d = 0; d < dim; ++d) dst[d] += src[d];
    }
  }
}

expected<dlrm_hps_runner> dlrm_hps_runner::create(const nn::model& model, lookup_session& session) {
  const auto& d = model.desc();
  if (d.arch != config::model_arch::dlrm) {
    return make_error(errc::invalid_argument, "{}: not a DLRM model", d.name);
  }
  std::vector<std::size_t> tables;
  for (std::size_t t = 0; t < d.table_rows.size(); ++t) {
    const std::string name = fmt::format("emb{}", t);
    SPINDLE_ASSIGN_OR_RETURN(std::size_t idx, session.table_index(name));
    if (session.table(idx).dim != std::uint32_t(d.embedding_dim)) {
      return make_error(errc::invalid_argument, "{}: table {} has dim {}, the model wants {}",
                        d.name, name, session.table(idx).dim, d.embedding_dim);
    }
    tables.push_back(idx);
  }
  return dlrm_hps_runner(model, session, std::move(tables));
}

status dlrm_hps_runner::check(const nn::sparse_input& in, std::size_t t, std::int64_t batch) const {
  const auto rows = model_->desc().table_rows[t];
  if (std::int64_t(in.offsets.size()) != batch + 1 || in.offsets.front() != 0 ||
      in.offsets.back() != std::int64_t(in.indices.size())) {
    return make_error(errc::invalid_argument, "table {}: {} offsets for {} rows and {} indices", t,
                      in.offsets.size(), batch, in.indices.size());
  }
  for (std::size_t b = 0; b + 1 < in.offsets.size(); ++b) {
    if (in.offsets[b] > in.offsets[b + 1]) {
      return make_error(errc::invalid_argument, "table {}: offsets[{}] > offsets[{}]", t, b, b + 1);
    }
  }
  for (std::size_t i = 0; i < in.indices.size(); ++i) {
    if (in.indices[i] < 0 || in.indices[i] >= rows) {
      return make_error(errc::invalid_argument, "table {}: indices[{}]={} out of range (rows {})",
                        t, i, in.indices[i], rows);
    }
  }
  return status::ok();
}

expected<nn::tensor> dlrm_hps_runner::infer(nn::allocator& a, const nn::tensor& dense,
                                            const std::vector<nn::sparse_input>& sparse,
                                            dlrm_timing* timing) const {
  using clock = std::chrono::steady_clock;
  if (sparse.size() != tables_.size()) {
    return make_error(errc::invalid_argument, "{}: {} sparse inputs for {} tables",
                      model_->desc().name, sparse.size(), tables_.size());
  }
  const auto start = clock::now();
  const auto dim = std::uint32_t(model_->desc().embedding_dim);
  std::vector<nn::tensor> pooled;
  std::vector<const nn::tensor*> refs;
  std::vector<float> rows;
  for (std::size_t t = 0; t < tables_.size(); ++t) {
    SPINDLE_TRY(check(sparse[t], t, dense.rows()));
    const std::vector<cache_key> keys(sparse[t].indices.begin(), sparse[t].indices.end());
    rows.resize(keys.size() * dim);
    SPINDLE_ASSIGN_OR_RETURN(lookup_report rep, session_->lookup(tables_[t], keys, rows));
    if (timing != nullptr) timing->tables.push_back(rep);
    SPINDLE_ASSIGN_OR_RETURN(auto p, nn::tensor::empty(a, {dense.rows(), std::int64_t(dim)}));
    pool_bags(rows, dim, sparse[t].offsets, {p.data(), std::size_t(p.numel())});
    pooled.push_back(std::move(p));
  }
  for (const auto& p : pooled) refs.push_back(&p);
  const auto looked_up = clock::now();
  auto out = model_->forward_dlrm_pooled(a, dense, refs);
  if (timing != nullptr) {
    timing->lookup_ms = std::chrono::duration<double, std::milli>(looked_up - start).count();
    timing->compute_ms =
        std::chrono::duration<double, std::milli>(clock::now() - looked_up).count();
  }
  return out;
}

}  // namespace spindle::hps
