// Recommendation models' embedding tables held row-wise quantised
// (table_precision int8 / int4) and their bags, float32 or quantised.
#include "nn/model.hpp"

namespace spindle::nn {

expected<bool> model::keep_quantized(const std::string& name,
                                     const std::vector<std::int64_t>& shape,
                                     std::span<const float> values) {
  const int bits = table_precision_bits(desc_.table_precision);
  if (bits == 32 || !desc_.is_rec() || !name.starts_with("emb_l.")) return false;
  SPINDLE_ASSIGN_OR_RETURN(auto q, quantized_table::quantize(values, shape[0], shape[1], bits,
                                                             desc_.name + ": " + name));
  quantized_.insert_or_assign(name, std::move(q));
  return true;
}

const quantized_table* model::qtable(const std::string& name) const {
  auto it = quantized_.find(name);
  return it == quantized_.end() ? nullptr : &it->second;
}

std::size_t model::table_bytes() const {
  std::size_t n = 0;
  for (const auto& [name, q] : quantized_) n += q.bytes();
  for (const auto& [name, t] : params_)
    if (name.starts_with("emb_l.")) n += std::size_t(t.numel()) * sizeof(float);
  return n;
}

expected<tensor> model::table_bag(allocator& a, const std::string& name, std::int64_t dim,
                                  const sparse_input& in, std::size_t t) const {
  const quantized_table* q = qtable(name);
  auto e = q ? embedding_bag(a, *q, in.indices, in.offsets)
             : embedding_bag(a, p(name), dim, in.indices, in.offsets, reduce_op::sum);
  if (!e) return std::move(e).error().with_context(fmt::format("table {}: ", t));
  return e;
}

}  // namespace spindle::nn
