#include "actors/remote_pipeline.hpp"

#include <fmt/format.h>

namespace spindle::actors {
namespace {

caf::behavior remote_pipeline(caf::event_based_actor* self, caf::actor bridge, int rank) {
  return {
      [=](run_atom, const batch_job& job) -> caf::response_promise {
        auto rp = self->make_response_promise();
        const std::size_t n = job.requests.size();
        self->request(bridge, caf::infinite, forward_atom::value, rank,
                      std::string(pipeline_target),
                      caf::make_message(run_atom::value, to_wire(job)))
            .then(
                [=](remote_result& r) mutable {
                  if (r.outputs.size() != n) {
                    rp.deliver(caf::make_error(caf::sec::runtime_error,
                                               fmt::format("rank {} answered {} of {} requests",
                                                           rank, r.outputs.size(), n)));
                    return;
                  }
                  rp.deliver(from_wire(std::move(r)));
                },
                [=](caf::error& e) mutable { rp.deliver(std::move(e)); });
        return rp;
      },
  };
}

}  // namespace

caf::actor spawn_remote_pipeline(caf::actor_system& sys, caf::actor bridge, int rank) {
  return sys.spawn(remote_pipeline, std::move(bridge), rank);
}

}  // namespace spindle::actors
