#include "config/tunables.hpp"

#include <fmt/format.h>

#include "core/enum_names.hpp"

namespace spindle::config {

const std::vector<tunable_doc>& tunables() {
  using s = tunable_scope;
  static const std::vector<tunable_doc> table = {
      {"routing_policy", s::gnn, "strict | loose | fixed",
       "how a batch's summed PSGS picks its executor"},
      {"psgs_threshold", s::gnn, "a summed PSGS >= 0 | calibrated",
       "the routing point, overriding the calibration's"},
      {"batch_deadline_us", s::gnn, "0..10000000", "how long a batch waits to fill"},
      {"max_batch", s::gnn, "1..65536", "requests per batch (also the admission floor)"},
      {"split_min", s::gnn, "0..65536",
       "a batch closing while two or more pipelines are idle is dealt out to them, parts of at "
       "least this many calls (0: never split)"},
      {"work_conserving", s::gnn, "true | false", "an idle pipeline takes the open batch at once"},
      {"express_max_requests", s::gnn, "0..64",
       "calls a door read together that run on its thread when the model is idle (0: never)"},
      {"fanouts", s::gnn, "one per layer, e.g. 25,10 (-1: all)",
       "the sampler's fanouts (one process only)"},
      {"precision", s::gnn, "fp32 | bf16 | int8",
       "the layers' projections in bfloat16 or int8 (calls in flight keep theirs; one process only)"},
      {"gnnsched_policy", s::gnn, "fifo | sqtf | bqt", "GNNSched's grouping on the device"},
      {"max_queue", s::gnn, "1..", "calls in flight before `overloaded` (hard cap)"},
      {"slo_ms", s::gnn, "0..", "latency objective sizing admission (0: only max_queue)"},
      {"placement_drift_threshold", s::cluster, "a total-variation distance >= 0",
       "re-plan placement past this FAP drift"},
      {"replan", s::cluster, "now", "re-plan feature placement now"},
      {"max_queue", s::rec, "1..", "calls in flight before `overloaded` (hard cap)"},
      {"slo_ms", s::rec, "0..", "latency objective sizing admission"},
      {"workers", s::rec, "1..1024", "the model's worker pool"},
      {"precision", s::rec, "fp32 | bf16 | int8",
       "the MLPs in bfloat16 or int8 (calls in flight keep theirs)"},
      {"max_batch_samples", s::rec, "1..", "samples per batch a worker runs"},
      {"intra_call", s::rec, "true | false",
       "idle workers share a large batch (chunks of >= 64 samples)"},
      {"queue_deadline_us", s::rec, "0..", "how long a call may wait for a worker"},
      {"manager_sla_ms", s::rec, "> 0", "the node manager's SLA for this model"},
      {"slack_low", s::rec, "0..1", "below it, the node manager adds a worker"},
      {"slack_high", s::rec, "0..1", "above it, the node manager removes one"},
      {"max_workers", s::rec, "1..", "workers the node manager may give this model"},
      {"refresh", s::parameter_server, "now", "refresh the L1 cache from the VDB/PDB"},
      {"hit_rate_threshold[.TABLE]", s::parameter_server, "0..1",
       "below it, misses are fetched synchronously"},
  };
  return table;
}

namespace {

constexpr enum_names<tunable_scope, 4> kScopeTitles{{{
    {tunable_scope::gnn, "GNN models"},
    {tunable_scope::cluster, "on a cluster's coordinator, also"},
    {tunable_scope::rec, "recommendation models"},
    {tunable_scope::parameter_server, "through the parameter server, also"}}}};

std::string_view scope_title(tunable_scope s) { return kScopeTitles.name(s, ""); }

}  // namespace

std::string tunable_names(tunable_scope scope) {
  std::string out;
  for (const auto& t : tunables())
    if (t.scope == scope) out += (out.empty() ? "" : ", ") + std::string(t.name);
  return out;
}

std::string tunables_help() {
  std::string out;
  for (auto scope : {tunable_scope::gnn, tunable_scope::cluster, tunable_scope::rec,
                     tunable_scope::parameter_server}) {
    out += fmt::format("  {}:\n", scope_title(scope));
    for (const auto& t : tunables())
      if (t.scope == scope) out += fmt::format("    {:<28} {} ({})\n", t.name, t.what, t.values);
  }
  return out;
}

}  // namespace spindle::config
