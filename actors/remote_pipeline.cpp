#include "actors/remote_pipeline.hpp"

#include <fmt/format.h>

namespace spindle::actors {
namespace {

pipeline_actor::behavior_type remote_pipeline(pipeline_actor::pointer self, caf::actor bridge,
                                              int rank,
                              std::shared_ptr<const serving::psgs_router> router,
                              std::function<double(const serving::gnn_request&)> psgs_of,
                              std::string target) {
  return {
      [=](run_atom, const batch_job& job) -> caf::typed_response_promise<serving::batch_result> {
        auto rp = self->make_response_promise<serving::batch_result>();
        const std::size_t n = job.requests.size();
        auto wire = to_wire(job);
        if (router && psgs_of) {
          double total = 0;
          for (const auto& r : job.requests) total += psgs_of(r);
          wire.executor = std::int32_t(router->route(total));
        }
        self->request(bridge, caf::infinite, forward_atom::value, rank, target,
                      caf::make_message(run_atom::value, wire))
            .then(
                [=](remote_result& r) mutable {
                  auto res = from_wire(std::move(r));
                  if (res && res->outputs.size() != n)
                    res = make_error(errc::corrupt_data, "rank {} answered {} of {} requests", rank,
                                     res->outputs.size(), n);
                  if (!res) {
                    rp.deliver(caf::make_error(caf::sec::runtime_error, res.error().to_string()));
                    return;
                  }
                  rp.deliver(std::move(*res));
                },
                [=](caf::error& e) mutable { rp.deliver(std::move(e)); });
        return rp;
      },
      // A rank's pipeline samples with the fanouts it started with (the gateway
      // refuses a fanouts change on a cluster), so there is nothing to forward.
      [=](fanouts_atom, const std::vector<int>&) {},
  };
}

}  // namespace

std::string pipeline_target_name(int index) {
  return index == 0 ? std::string(pipeline_target) : fmt::format("{}.{}", pipeline_target, index);
}

pipeline_actor spawn_remote_pipeline(caf::actor_system& sys, caf::actor bridge, int rank,
                                     std::shared_ptr<const serving::psgs_router> router,
                                     std::function<double(const serving::gnn_request&)> psgs_of,
                                     int index) {
  return sys.spawn(remote_pipeline, std::move(bridge), rank, std::move(router), std::move(psgs_of),
                   pipeline_target_name(index));
}

}  // namespace spindle::actors
