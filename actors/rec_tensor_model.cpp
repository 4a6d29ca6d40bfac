// A recommendation model on SplitRPC's tensor path (split_path.hpp).
#include "actors/split_path.hpp"
#include "splitrpc/rec_wire.hpp"

namespace spindle::actors {

tensor_model rec_tensor_model(std::string name, std::shared_ptr<const hps::rec_runner> runner,
                              const nn::model* model, std::shared_ptr<const void> owner) {
  tensor_model m;
  m.name = std::move(name);
  m.max_batch = 256;  // calls per pass; their samples become one forward pass
  m.compute_checked = [runner, model, owner](const float* data,
                                             const std::vector<std::size_t>& sizes,
                                             std::vector<std::string>& errors) {
    const auto& d = model->desc();
    tensor_model::results out(sizes.size());
    std::vector<serving::rec_batch_input> inputs(sizes.size());
    std::vector<std::size_t> good;
    for (std::size_t k = 0; k < sizes.size(); data += sizes[k], ++k) {
      auto in = splitrpc::unpack_rec_request({data, sizes[k]}, d.dense_in, d.table_rows.size());
      if (!in) {
        errors[k] = in.error().message();
        continue;
      }
      inputs[k] = std::move(*in);
      good.push_back(k);
    }
    // One forward pass over every good request (a bad key fails the pass: then
    // each runs alone, so it fails only itself).
    auto run = [&](std::span<const std::size_t> which) -> status {
      std::vector<serving::rec_batch_view> views;
      std::vector<std::int64_t> batches;
      for (auto k : which) {
        views.push_back({inputs[k].batch, inputs[k].dense, inputs[k].sparse});
        batches.push_back(inputs[k].batch);
      }
      nn::heap_allocator alloc;
      auto infer = [&](std::int64_t batch, std::span<const float> dense,
                       const std::vector<nn::sparse_input>& sparse) {
        return runner->infer(
            alloc, nn::tensor::borrow(const_cast<float*>(dense.data()), {batch, d.dense_in}),
            sparse);
      };
      auto y = which.size() == 1  // alone: no merge copy
                   ? infer(inputs[which[0]].batch, inputs[which[0]].dense, inputs[which[0]].sparse)
                   : [&] {
                       auto merged = serving::merge_rec_batches(views);
                       return infer(merged.batch, merged.dense, merged.sparse);
                     }();
      if (!y) return y.error();
      auto split = serving::split_scores({y->data(), std::size_t(y->numel())}, batches);
      for (std::size_t i = 0; i < which.size(); ++i) out[which[i]] = std::move(split[i]);
      return status::ok();
    };
    if (good.empty() || run(good)) return out;
    for (auto k : good)
      if (auto st = run({&k, 1}); !st) errors[k] = st.message();
    return out;
  };
  return m;
}

}  // namespace spindle::actors
