#include "actors/dlrm_inference_actor.hpp"

#include <optional>

namespace spindle::actors {
namespace {

struct dlrm_state {
  std::shared_ptr<hps::lookup_session> session;
  std::optional<hps::dlrm_hps_runner> runner;
  status setup_error;
};

}  // namespace

dlrm_reply run_dlrm_batch(const hps::rec_runner& runner, const nn::model& model,
                          const dlrm_request& req) {
  dlrm_reply reply;
  const auto dense_in = model.desc().dense_in;
  if (req.batch <= 0 || req.dense.size() != std::size_t(req.batch * dense_in)) {
    reply.error =
        make_error(errc::invalid_argument, "dlrm request: {} dense values for batch {} x {}",
                   req.dense.size(), req.batch, dense_in);
    return reply;
  }
  std::vector<float> dense = req.dense;
  nn::heap_allocator alloc;
  auto out = runner.infer(alloc, nn::tensor::borrow(dense.data(), {req.batch, dense_in}),
                          req.sparse, &reply.timing);
  if (!out) {
    reply.error = out.error();
  } else {
    reply.scores.assign(out->data(), out->data() + out->numel());
  }
  return reply;
}

namespace {

dlrm_inference_actor::behavior_type dlrm_behavior(
    dlrm_inference_actor::stateful_pointer<dlrm_state> self, const nn::model* model,
    std::shared_ptr<hps::lookup_session> session) {
  self->state.session = std::move(session);
  auto runner = hps::dlrm_hps_runner::create(*model, *self->state.session);
  if (runner) {
    self->state.runner.emplace(std::move(*runner));
  } else {
    self->state.setup_error = runner.error();
  }
  return {
      [=](dlrm_atom, const dlrm_request& req) -> dlrm_reply {
        if (!self->state.runner) return dlrm_reply{{}, self->state.setup_error, {}};
        return run_dlrm_batch(*self->state.runner, *model, req);
      },
  };
}

}  // namespace

dlrm_inference_actor spawn_dlrm_inference(caf::actor_system& sys, const nn::model& model,
                                          std::shared_ptr<hps::lookup_session> session) {
  return sys.spawn<caf::detached>(dlrm_behavior, &model, std::move(session));
}

}  // namespace spindle::actors
