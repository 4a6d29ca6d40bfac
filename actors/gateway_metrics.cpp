#include "actors/gateway_metrics.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace spindle::actors::detail {

using transport::rpc::rpc_status;

void histogram::observe(double value) {
  std::size_t b = 0;
  while (b < bounds_.size() && value > bounds_[b]) ++b;
  counts_[b].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(std::uint64_t(std::max(0.0, value) * unit_), std::memory_order_relaxed);
}

std::uint64_t histogram::count() const {
  std::uint64_t n = 0;
  for (const auto& c : counts_) n += c.load(std::memory_order_relaxed);
  return n;
}

void histogram::render(std::string& out, const std::string& name, const std::string& labels) const {
  std::uint64_t cumulative = 0;
  for (std::size_t b = 0; b < counts_.size(); ++b) {
    cumulative += counts_[b].load(std::memory_order_relaxed);
    const std::string le = b < bounds_.size() ? fmt::format("{}", bounds_[b]) : "+Inf";
    out += fmt::format("{}_bucket{{{},le=\"{}\"}} {}\n", name, labels, le, cumulative);
  }
  out += fmt::format("{}_sum{{{}}} {}\n", name, labels, double(sum_.load()) / unit_);
  out += fmt::format("{}_count{{{}}} {}\n", name, labels, cumulative);
}

void model_counters::record_execution(std::uint64_t size) {
  executions.fetch_add(1, std::memory_order_relaxed);
  batch_size.observe(double(size));
}

void model_counters::record(rpc_status s, double ms) {
  auto& counter = s == rpc_status::ok                  ? ok
                  : s == rpc_status::overloaded        ? overloaded
                  : s == rpc_status::deadline_exceeded ? deadline_exceeded
                  : s == rpc_status::bad_request       ? bad_request
                                                       : errors;
  ++counter;
  last_answer_ms.store(std::uint64_t(std::chrono::duration_cast<std::chrono::milliseconds>(
                                         std::chrono::system_clock::now().time_since_epoch())
                                         .count()),
                       std::memory_order_relaxed);
  if (s != rpc_status::ok) {
    fail_count.fetch_add(1, std::memory_order_relaxed);
    fail_ns.fetch_add(std::uint64_t(ms * 1e6), std::memory_order_relaxed);
    return;
  }
  latency.observe(ms / 1e3);
  const sample x{ms, std::chrono::steady_clock::now()};
  std::lock_guard lock(mu_);
  if (latency_ms_.size() < 100000) {
    latency_ms_.push_back(x);
  } else {
    latency_ms_[next_++ % latency_ms_.size()] = x;
  }
}

namespace {

// p50/p99/p999 of `l` (sorted here).
nlohmann::json percentiles(std::vector<double> l) {
  std::sort(l.begin(), l.end());
  auto pct = [&](double q) {
    return l.empty() ? 0.0 : l[std::min(l.size() - 1, std::size_t(q * double(l.size())))];
  };
  return {{"p50", pct(0.5)}, {"p99", pct(0.99)}, {"p999", pct(0.999)}, {"count", l.size()}};
}

}  // namespace

std::pair<double, std::size_t> model_counters::tail_since(
    std::chrono::steady_clock::time_point since, double q) {
  std::vector<double> recent;
  {
    std::lock_guard lock(mu_);
    for (const auto& x : latency_ms_)
      if (x.at >= since) recent.push_back(x.ms);
  }
  if (recent.empty()) return {0.0, 0};
  std::sort(recent.begin(), recent.end());
  return {recent[std::min(recent.size() - 1, std::size_t(q * double(recent.size())))],
          recent.size()};
}

nlohmann::json model_counters::json(const serving::admission_control& admission) {
  // All of the ring, and the last 10 s of it (so a live change shows at once).
  std::vector<double> all, recent;
  const auto since = std::chrono::steady_clock::now() - std::chrono::seconds(10);
  {
    std::lock_guard lock(mu_);
    all.reserve(latency_ms_.size());
    for (const auto& x : latency_ms_) {
      all.push_back(x.ms);
      if (x.at >= since) recent.push_back(x.ms);
    }
  }
  return {{"requests", requests.load()},
          {"ok", ok.load()},
          {"overloaded", overloaded.load()},
          {"deadline_exceeded", deadline_exceeded.load()},
          {"bad_request", bad_request.load()},
          {"errors", errors.load()},
          {"inferences", inferences.load()},
          {"executions", executions.load()},
          {"in_flight", admission.in_flight()},
          {"admission_limit", admission.limit()},
          {"capacity_rps",  // null until measured under load
           admission.capacity_rps() > 0 ? nlohmann::json(admission.capacity_rps())
                                        : nlohmann::json(nullptr)},
          {"latency_ms", percentiles(std::move(all))},
          // Triton's statistics extension reads these: [count, total ns] per duration.
          {"durations_ns",
           {{"success", {latency.count(), latency.sum_units()}},
            {"fail", {fail_count.load(), fail_ns.load()}},
            {"queue", {requests.load(), queue_us.load() * 1000}},
            {"compute", {compute.count(), compute.sum_units()}}}},
          {"last_inference_ms", last_answer_ms.load()},
          {"latency_ms_10s", percentiles(std::move(recent))}};
}

void model_counters::render(std::map<std::string, std::string>& families, const std::string& model,
                            const serving::admission_control& admission, bool stages) const {
  const std::string m = fmt::format("model=\"{}\"", model);
  families["spindle_requests_total"] +=
      fmt::format("spindle_requests_total{{{}}} {}\n", m, requests.load());
  for (auto [status, n] : {std::pair{"ok", &ok},
                           {"overloaded", &overloaded},
                           {"deadline_exceeded", &deadline_exceeded},
                           {"bad_request", &bad_request},
                           {"error", &errors}}) {
    families["spindle_responses_total"] +=
        fmt::format("spindle_responses_total{{{},status=\"{}\"}} {}\n", m, status, n->load());
  }
  families["spindle_inferences_total"] +=
      fmt::format("spindle_inferences_total{{{}}} {}\n", m, inferences.load());
  families["spindle_executions_total"] +=
      fmt::format("spindle_executions_total{{{}}} {}\n", m, executions.load());
  batch_size.render(families["spindle_batch_size"], "spindle_batch_size", m);
  families["spindle_model_ready"] += fmt::format("spindle_model_ready{{{}}} 1\n", m);
  families["spindle_queue_depth"] +=
      fmt::format("spindle_queue_depth{{{}}} {}\n", m, admission.in_flight());
  families["spindle_admission_limit"] +=
      fmt::format("spindle_admission_limit{{{}}} {}\n", m, admission.limit());
  latency.render(families["spindle_request_latency_seconds"], "spindle_request_latency_seconds", m);
  if (!stages) return;
  families["spindle_queue_duration_seconds_total"] += fmt::format(
      "spindle_queue_duration_seconds_total{{{}}} {}\n", m, double(queue_us.load()) / 1e6);
  for (auto [stage, h] : {std::pair{"batching", &batching},
                          {"sampling", &sampling},
                          {"gathering", &gathering},
                          {"compute", &compute}}) {
    h->render(families["spindle_stage_latency_seconds"], "spindle_stage_latency_seconds",
              fmt::format("{},stage=\"{}\"", m, stage));
  }
}

nlohmann::json type_tables_json(const std::vector<nn::type_table_stats>& tables) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& t : tables)
    j[t.type] = {{"table", t.table},         {"lookups", t.lookups},
                 {"l1_hits", t.l1_hits},     {"l1_misses", t.l1_misses},
                 {"vdb_hits", t.vdb_hits},   {"pdb_reads", t.pdb_reads},
                 {"bytes_read", t.bytes_read}, {"rows_loaded", t.rows_loaded},
                 {"bytes_loaded", t.bytes_loaded}};
  return j;
}

const std::vector<std::array<const char*, 3>>& type_table_help() {
  static const std::vector<std::array<const char*, 3>> help = {
      {"spindle_type_table_lookups_total", "counter",
       "Reads of a typed model's embedding table on the parameter server (one per layer input)."},
      {"spindle_type_table_l1_total", "counter",
       "Rows (unique per read) found in the table's L1 cache, or missed."},
      {"spindle_type_table_lower_rows_total", "counter",
       "L1 misses answered by the VDB or read from the PDB."},
      {"spindle_type_table_read_bytes_total", "counter", "Bytes of rows the VDB and PDB gave."},
      {"spindle_type_table_loaded_rows", "gauge",
       "Rows streamed into the PDB when the model loaded (0: the table was already whole)."},
      {"spindle_type_table_loaded_bytes", "gauge", "Bytes of those rows."}};
  return help;
}

void render_type_tables(std::map<std::string, std::string>& families, const std::string& model,
                        const std::vector<nn::type_table_stats>& tables) {
  for (const auto& t : tables) {
    const auto l = fmt::format("model=\"{}\",type=\"{}\"", model, t.type);
    auto add = [&](const char* family, const std::string& extra, std::uint64_t v) {
      families[family] += fmt::format("{}{{{}{}}} {}\n", family, l, extra, v);
    };
    add("spindle_type_table_lookups_total", "", t.lookups);
    add("spindle_type_table_l1_total", ",result=\"hit\"", t.l1_hits);
    add("spindle_type_table_l1_total", ",result=\"miss\"", t.l1_misses);
    add("spindle_type_table_lower_rows_total", ",level=\"vdb\"", t.vdb_hits);
    add("spindle_type_table_lower_rows_total", ",level=\"pdb\"", t.pdb_reads);
    add("spindle_type_table_read_bytes_total", "", t.bytes_read);
    add("spindle_type_table_loaded_rows", "", t.rows_loaded);
    add("spindle_type_table_loaded_bytes", "", t.bytes_loaded);
  }
}

}  // namespace spindle::actors::detail
