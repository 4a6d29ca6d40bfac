#include "actors/bridge_messages.hpp"

namespace spindle::actors {

remote_batch to_wire(const batch_job& job) { return {job.requests}; }

remote_result to_wire(const sched::batch_result& r) {
  remote_result w;
  w.outputs = r.outputs;
  for (const auto& e : r.errors) {
    w.error_codes.push_back(std::int32_t(e.code()));
    w.error_messages.push_back(e.message());
  }
  w.sample_s = r.times.sample_s;
  w.gather_s = r.times.gather_s;
  w.compute_s = r.times.compute_s;
  w.executor = std::int32_t(r.executor);
  return w;
}

sched::batch_result from_wire(remote_result w) {
  sched::batch_result r;
  r.outputs = std::move(w.outputs);
  r.errors.resize(r.outputs.size());
  for (std::size_t i = 0; i < r.errors.size() && i < w.error_codes.size(); ++i)
    if (w.error_codes[i] != 0)
      r.errors[i] = status(w.error_codes[i] > 0 && w.error_codes[i] <= int(errc::internal)
                               ? errc(w.error_codes[i])
                               : errc::internal,
                           i < w.error_messages.size() ? w.error_messages[i] : std::string());
  r.times = {w.sample_s, w.gather_s, w.compute_s};
  r.executor = sched::psgs_router::choice(w.executor);
  return r;
}

void add_bridge_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<remote_batch>("spindle.remote_batch");
  cfg.add_message_type<remote_result>("spindle.remote_result");
}

std::string error_text(const caf::error& e) {
  const auto& ctx = e.context();
  if (ctx.match_elements<std::string>()) return ctx.get_as<std::string>(0);
  return to_string(e);
}

}  // namespace spindle::actors
