#include "actors/bridge_messages.hpp"

#include <cstring>

namespace spindle::actors {

remote_batch to_wire(const batch_job& job) { return {job.requests, -1}; }

remote_result to_wire(const serving::batch_result& r) {
  remote_result w;
  std::size_t floats = 0;
  for (const auto& o : r.outputs) floats += o.size();
  w.output_bytes.resize(floats * sizeof(float));
  char* at = w.output_bytes.data();
  for (const auto& o : r.outputs) {
    w.output_sizes.push_back(std::uint32_t(o.size()));
    if (!o.empty()) std::memcpy(at, o.data(), o.size() * sizeof(float));
    at += o.size() * sizeof(float);
  }
  for (const auto& e : r.errors) {
    w.error_codes.push_back(std::int32_t(e.code()));
    w.error_messages.push_back(e.message());
  }
  w.sample_s = r.times.sample_s;
  w.gather_s = r.times.gather_s;
  w.compute_s = r.times.compute_s;
  w.executor = std::int32_t(r.executor);
  w.graph_version = r.graph_version;
  return w;
}

expected<serving::batch_result> from_wire(remote_result w) {
  std::uint64_t floats = 0;
  for (auto n : w.output_sizes) floats += n;
  if (floats * sizeof(float) != w.output_bytes.size())
    return make_error(errc::corrupt_data, "remote_result: sizes sum to {} floats but {} bytes came",
                      floats, w.output_bytes.size());
  serving::batch_result r;
  const char* at = w.output_bytes.data();
  for (auto n : w.output_sizes) {
    auto& o = r.outputs.emplace_back(n);
    if (n) std::memcpy(o.data(), at, n * sizeof(float));
    at += n * sizeof(float);
  }
  r.errors.resize(r.outputs.size());
  for (std::size_t i = 0; i < r.errors.size() && i < w.error_codes.size(); ++i)
    if (w.error_codes[i] != 0)
      r.errors[i] = status(w.error_codes[i] > 0 && w.error_codes[i] <= int(errc::internal)
                               ? errc(w.error_codes[i])
                               : errc::internal,
                           i < w.error_messages.size() ? w.error_messages[i] : std::string());
  r.times = {w.sample_s, w.gather_s, w.compute_s};
  r.executor = serving::psgs_router::choice(w.executor);
  r.graph_version = w.graph_version;
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
