#include "actors/remote_pipeline.hpp"

#include <fmt/format.h>

namespace spindle::actors {
namespace {

caf::behavior remote_pipeline(caf::event_based_actor* self, caf::actor bridge, int rank,
                              std::shared_ptr<const sched::psgs_router> router,
                              std::function<double(const sched::gnn_request&)> psgs_of) {
  return {
      [=](run_atom, const batch_job& job) -> caf::response_promise {
        auto rp = self->make_response_promise();
        const std::size_t n = job.requests.size();
        auto wire = to_wire(job);
        if (router && psgs_of) {
          double total = 0;
          for (const auto& r : job.requests) total += psgs_of(r);
          wire.executor = std::int32_t(router->route(total));
        }
        self->request(bridge, caf::infinite, forward_atom::value, rank,
                      std::string(pipeline_target), caf::make_message(run_atom::value, wire))
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
  };
}

}  // namespace

caf::actor spawn_remote_pipeline(caf::actor_system& sys, caf::actor bridge, int rank,
                                 std::shared_ptr<const sched::psgs_router> router,
                                 std::function<double(const sched::gnn_request&)> psgs_of) {
  return sys.spawn(remote_pipeline, std::move(bridge), rank, std::move(router), std::move(psgs_of));
}

}  // namespace spindle::actors
