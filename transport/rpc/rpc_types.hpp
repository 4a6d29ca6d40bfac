// The front door's request and reply types as plain C++ values, and the
// service interface the RPC server calls. Cap'n Proto types never leave
// transport/rpc/: the server and client translate at the edge.
// Plain values; thread-safe to copy.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.hpp"
#include "graph/graph_update.hpp"

namespace spindle::transport::rpc {

enum class rpc_status {
  ok,
  overloaded,
  deadline_exceeded,
  bad_request,
  unavailable,
  internal,
  unauthorized
};
std::string_view to_string(rpc_status s);

struct gnn_call {
  std::string model;
  std::vector<std::int64_t> seeds;
  std::uint64_t sampler_seed = 0;
  std::uint32_t deadline_us = 0;      // 0: none
  std::vector<std::string> seed_ids;  // instead of seeds: input ids the server resolves
  std::uint64_t min_version = 0;      // the graph version the answer must include (0: any)
  std::uint32_t version_wait_us = 0;  // set by the server: how long it waited for min_version
  /// seeds are pairs u0 v0 u1 v1 ... to score (a model with task "link"): one
  /// score per pair comes back (width 1).
  bool pairs = false;
  /// Values of the model to answer instead of its output (a stack model's op
  /// names): each one's seeds x width, one after another.
  std::vector<std::string> outputs;
  /// A typed graph: the seeds' node type, each seed numbered within it.
  std::string node_type;
};

struct gnn_answer {
  rpc_status status = rpc_status::ok;
  std::string message;
  std::uint32_t width = 0;
  std::vector<float> outputs;  // seeds x width
  std::uint64_t server_us = 0;
  std::uint64_t graph_version = 0;  // the graph version it was computed on
  std::vector<std::uint32_t> widths;  // named outputs: each one's width (width: their sum)
};

/// One batch of graph changes (Admin.updateGraph): row ids as seeds use them;
/// added nodes get the ids after the last one. A door never sets its stream
/// source. See graph/graph_update.hpp.
using graph_edit = graph::graph_update;

struct graph_edit_answer {
  rpc_status status = rpc_status::ok;
  std::string message;
  std::uint64_t version = 0;          // the graph's version after the batch (or now)
  std::int64_t nodes = 0;             // node ids in use (removed ones included)
  std::vector<std::int64_t> new_ids;  // the added nodes' ids
};

struct rec_bag {
  std::vector<std::int64_t> indices, offsets;
};

struct rec_call {
  std::string model;
  std::uint32_t batch = 0;
  std::vector<float> dense;
  std::vector<rec_bag> sparse;
  std::uint32_t deadline_us = 0;
};

struct rec_answer {
  rpc_status status = rpc_status::ok;
  std::string message;
  std::vector<float> scores;
  std::uint64_t server_us = 0;
};

struct tensor_answer {
  rpc_status status = rpc_status::ok;
  std::string message;
  std::vector<float> result;
  std::uint64_t server_us = 0, compute_us = 0;
};

struct split_session {
  std::vector<std::uint8_t> worker_address;
  std::vector<std::string> models;
  std::uint64_t max_payload = 0;
};

/// The 12-byte header of a split payload active message.
struct split_header {
  std::uint64_t call_id = 0;
  std::uint32_t model = 0;
};
inline constexpr unsigned split_am_id = 7;

struct model_info {
  std::string name, kind, arch;
  std::uint32_t input_width = 0, output_width = 0;
  std::uint32_t tables = 0;   // recommendation models: embedding tables (inputs per table)
  std::string version = "1";  // the version a call without a version gets (model repository)
  std::vector<std::string> versions;      // every version served, highest first (empty: `version`)
  std::vector<std::uint64_t> table_rows;  // recommendation models: rows of each table
  std::string task = "node";              // GNNs: node, or link (calls may give pairs to score)
  std::vector<std::string> node_types;    // a typed model: the node types a call may name
  std::vector<std::string> pair_types;    // a typed link model: its pairs' (src, dst) node types
};

struct tunable {
  std::string name, value;
};

/// Where one call goes, as a door needs it per call: the model's kind, the name
/// the call is served under (NAME, or NAME@VERSION for another served version),
/// the version it reports, and what a recommendation call's inputs must match.
struct call_route {
  bool gnn = true;
  std::string call_name;
  std::string version;
  std::uint32_t input_width = 0;  // recommendation models: dense features
  std::uint32_t tables = 0;       // recommendation models: embedding tables
  bool link = false;              // a GNN with task "link": a call may give pairs to score
};

/// What the server asks of the serving system. Inference answers through `done`
/// exactly once, from any thread; it must not block the caller (the RPC event
/// loop). Admin calls are short and synchronous (the token is already checked).
class rpc_service {
 public:
  virtual ~rpc_service() = default;
  virtual void infer_gnn(gnn_call call, std::function<void(gnn_answer)> done) = 0;
  virtual void infer_rec(rec_call call, std::function<void(rec_answer)> done) = 0;
  /// A door that takes many calls in one pass of its event loop brackets them:
  /// calls made on this thread between begin_turn and end_turn may be handed
  /// on together at end_turn (one wake-up of the serving threads, not one a
  /// call). A door that never calls them has each call handed on at once.
  virtual void begin_turn() {}
  virtual void end_turn() {}
  virtual std::string stats_json() = 0;
  virtual std::vector<model_info> models() = 0;
  virtual expected<std::vector<tunable>> tunables(const std::string& model) = 0;
  virtual status set_tunable(const std::string& model, const std::string& name,
                             const std::string& value) = 0;
  virtual std::string members_json() = 0;
  /// One model's description, or nullopt (the default scans models()).
  virtual std::optional<model_info> model(const std::string& name) {
    for (auto& m : models())
      if (m.name == name) return std::move(m);
    return std::nullopt;
  }
  /// The route of a call for `name` at `version` (empty: the version a call
  /// without one gets), or nullopt when no such model or version is served. The
  /// default reads model(name); servers with many versions answer it cheaper.
  virtual std::optional<call_route> route(const std::string& name, const std::string& version) {
    auto m = model(name);
    if (!m) return std::nullopt;
    const bool other = !version.empty() && version != m->version;
    if (other && std::find(m->versions.begin(), m->versions.end(), version) == m->versions.end())
      return std::nullopt;
    return call_route{m->kind == "gnn", other ? name + "@" + version : name,
                      other ? version : m->version, m->input_width, m->tables,
                      m->kind == "gnn" && m->task == "link"};
  }
  /// Ready to serve: models loaded and warmed (KServe /v2/health/ready, Admin.version).
  virtual bool ready() { return true; }
  /// `name` is loaded, warmed and not draining.
  virtual bool model_ready(const std::string& name) { return model(name).has_value(); }
  /// Loads a model directory under `name` (Admin.loadModel); the default serves none.
  virtual status load_model(const std::string& name, const std::string& path) {
    (void)path;
    return make_error(errc::unsupported, "this server cannot load models ('{}')", name);
  }
  /// Stops serving `name` once its calls in flight finished (Admin.unloadModel).
  virtual status unload_model(const std::string& name) {
    return make_error(errc::unsupported, "this server cannot unload models ('{}')", name);
  }

  /// Applies one batch of graph changes, whole or not at all (Admin.updateGraph).
  /// May block (it is durable before it answers): doors call it off their event loop.
  virtual graph_edit_answer update_graph(graph_edit edit) {
    (void)edit;
    return {rpc_status::unavailable, "this server takes no graph updates"};
  }
  /// The served graph's version and node count (Admin.graphVersion).
  virtual graph_edit_answer graph_version() {
    return {rpc_status::unavailable, "this server takes no graph updates"};
  }

  /// Tensor models (unified path): `payload` is valid only during the call.
  virtual void infer_tensor(const std::string& model, std::span<const std::byte> payload,
                            std::uint32_t deadline_us, std::function<void(tensor_answer)> done) {
    (void)payload, (void)deadline_us;
    done({rpc_status::bad_request, "no tensor model '" + model + "' on this server"});
  }
  virtual expected<split_session> open_split() {
    return make_error(errc::unsupported, "this server has no SplitRPC data path");
  }
  virtual void infer_split(const std::string& model, std::uint64_t call_id, std::uint64_t bytes,
                           std::uint32_t deadline_us, std::function<void(tensor_answer)> done) {
    (void)call_id, (void)bytes, (void)deadline_us;
    done({rpc_status::bad_request, "no tensor model '" + model + "' on this server"});
  }
};

/// Constant-time comparison of an Admin token with the configured one.
bool token_matches(std::string_view given, std::string_view expected);

}  // namespace spindle::transport::rpc
