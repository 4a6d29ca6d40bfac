#include "actors/load_client.hpp"

#include <chrono>

namespace spindle::actors {
namespace {

using clock_type = std::chrono::steady_clock;

struct client_state {
  load_spec spec;
  std::shared_ptr<load_result> out;
  std::size_t sent = 0, received = 0;
  clock_type::time_point start;
};

using client_ptr = caf::stateful_actor<client_state>*;

void send_one(client_ptr self, const batcher_actor& batcher, const caf::actor& notify) {
  auto& st = self->state;
  if (st.sent >= st.spec.requests.size()) return;
  const auto t0 = clock_type::now();
  const std::size_t index = st.sent;
  auto req = st.spec.requests[st.sent++];
  self->request(batcher, caf::infinite, infer_atom::value, std::move(req))
      .then(
          [=](const gnn_reply& r) {
            auto& s = self->state;
            if (s.spec.keep_answers) {
              s.out->outputs[index] = r.output;
              s.out->error_of[index] = r.error ? std::string() : r.error.to_string();
            }
            if (!r.error) {
              if (s.out->errors++ == 0) s.out->first_error = r.error.to_string();
            } else {
              s.out->latency_s.push_back(
                  std::chrono::duration<double>(clock_type::now() - t0).count());
              s.out->sample_s += r.times.sample_s, s.out->gather_s += r.times.gather_s;
              s.out->compute_s += r.times.compute_s, s.out->queued_s += r.queued_s;
            }
            if (s.spec.rate <= 0) send_one(self, batcher, notify);  // closed loop: next one
            if (++s.received == s.spec.requests.size()) {
              s.out->wall_s = std::chrono::duration<double>(clock_type::now() - s.start).count();
              self->send(notify, done_atom::value);
              self->quit();
            }
          },
          [=](caf::error& err) {
            auto& s = self->state;
            if (s.out->errors++ == 0) s.out->first_error = to_string(err);
            if (s.spec.keep_answers) s.out->error_of[index] = to_string(err);
            if (s.spec.rate <= 0) send_one(self, batcher, notify);
            if (++s.received == s.spec.requests.size()) {
              s.out->wall_s = std::chrono::duration<double>(clock_type::now() - s.start).count();
              self->send(notify, done_atom::value);
              self->quit();
            }
          });
}

caf::behavior load_client(client_ptr self, batcher_actor batcher, load_spec spec,
                          std::shared_ptr<load_result> out, caf::actor notify) {
  self->state.spec = std::move(spec);
  self->state.out = std::move(out);
  self->state.start = clock_type::now();
  if (self->state.spec.keep_answers) {
    self->state.out->outputs.resize(self->state.spec.requests.size());
    self->state.out->error_of.resize(self->state.spec.requests.size());
  }
  if (self->state.spec.rate > 0) {
    self->send(self, tick_atom::value);
  } else {
    for (int c = 0; c < self->state.spec.clients; ++c) send_one(self, batcher, notify);
  }
  return {
      [=](tick_atom) {
        // Open loop: send every request whose scheduled time has come, then sleep.
        auto& s = self->state;
        const double elapsed = std::chrono::duration<double>(clock_type::now() - s.start).count();
        while (s.sent < s.spec.requests.size() && double(s.sent) / s.spec.rate <= elapsed)
          send_one(self, batcher, notify);
        if (s.sent < s.spec.requests.size()) {
          const double next = double(s.sent) / s.spec.rate - elapsed;
          self->delayed_send(self,
                             std::chrono::microseconds(std::int64_t(std::max(next, 0.0) * 1e6)),
                             tick_atom::value);
        }
      },
  };
}

}  // namespace

caf::actor spawn_load_client(caf::actor_system& sys, batcher_actor batcher, load_spec spec,
                             std::shared_ptr<load_result> out, caf::actor notify) {
  return sys.spawn(load_client, std::move(batcher), std::move(spec), std::move(out),
                   std::move(notify));
}

}  // namespace spindle::actors
