#include "client/gnn_load.hpp"

#include <fstream>
#include <random>

#include "graph/dataset.hpp"
#include "serving/gnn_pipeline.hpp"

namespace spindle::client {

expected<std::vector<std::int64_t>> draw_seeds(const std::string& spec, std::size_t n,
                                               std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::int64_t> out;
  if (spec.starts_with("uniform:")) {
    const auto nodes = std::stoll(spec.substr(8));
    if (nodes <= 0)
      return make_error(errc::invalid_argument, "--seeds {}: node count must be > 0", spec);
    std::uniform_int_distribution<std::int64_t> pick(0, nodes - 1);
    for (std::size_t i = 0; i < n; ++i) out.push_back(pick(rng));
  } else if (spec.starts_with("degree:")) {
    SPINDLE_ASSIGN_OR_RETURN(auto ds, graph::dataset::open(spec.substr(7)));
    for (const auto& r : serving::degree_requests(ds, n)) out.push_back(r.seeds[0]);
  } else {
    std::ifstream in(spec);
    if (!in)
      return make_error(errc::not_found,
                        "--seeds {}: expected uniform:N, degree:DIR or a trace file", spec);
    std::vector<std::int64_t> trace;
    for (std::int64_t v; in >> v;) trace.push_back(v);
    if (trace.empty()) return make_error(errc::invalid_argument, "{}: no node ids", spec);
    for (std::size_t i = 0; i < n; ++i) out.push_back(trace[i % trace.size()]);
  }
  return out;
}

std::vector<transport::rpc::gnn_call> gnn_load_calls(const std::string& model,
                                                     const std::vector<std::int64_t>& seeds,
                                                     bool reproducible, std::uint32_t deadline_us) {
  std::vector<transport::rpc::gnn_call> calls;
  for (std::size_t i = 0; i < seeds.size(); ++i)
    calls.push_back({model, {seeds[i]}, reproducible ? i + 1 : 0, deadline_us});
  return calls;
}

}  // namespace spindle::client
