// The front-door half of `spindle serve`: the admin token (read from a file, or
// created there with 0600 permissions), the gateway over the serving actors,
// the Cap'n Proto server, and the wait for SIGINT/SIGTERM.
#pragma once

#include <caf/all.hpp>
#include <string>
#include <vector>

#include "actors/gateway.hpp"
#include "runtime/hps_stack.hpp"
#include "serving/admission.hpp"

namespace spindle::runtime {

struct front_door_args {
  std::string listen = "127.0.0.1:7400";
  std::string admin_token_file;
  std::string metrics;                     // HOST:PORT of the Prometheus endpoint; empty: none
  std::string access_log;                  // --access-log FILE: one line per call; empty: none
  std::string http;                        // HOST:PORT of KServe v2 over HTTP/REST; empty: none
  std::string grpc;                        // HOST:PORT of KServe v2 over gRPC; empty: none
  std::size_t http_max_body_mb = 64;       // larger HTTP bodies and gRPC messages are refused
  std::vector<std::string> tensor_models;  // built-in tensor models on the SplitRPC path ("sum")
  std::size_t max_queue = 1024;            // hard cap on calls in flight per model
  std::uint32_t slo_ms = 30;               // end-to-end objective the admission limit is sized from
  std::size_t max_connections = 0;         // 0: the descriptor limit less 64, at most 4,096
  std::size_t max_connections_per_peer = 0;  // across all doors (0: a quarter of the doors' budget)
  unsigned door_poll_us = 100;  // Cap'n Proto and gRPC doors poll this long after a lone call (0: never)
  std::string node_manager;     // "hera" or "parties": resize recommendation pools; empty: off
  std::string profiles;         // --profiles: the profile table Hera's manager reads
  int manager_max_workers = 0;  // workers one model may have (0: the cores)
  std::vector<std::string> rec_models;  // --rec-model NAME=DIR: tables in memory, own pool
  int rec_workers = 2;                  // each one's starting workers
  std::string rec_precision;            // --rec-precision: fp32|bf16 for every one (empty: model.toml's)
  std::string rec_table_precision;      // --rec-table-precision: fp32|int8|int4 (empty: model.toml's)
  bool slo_from_flag = false;           // --slo-ms given (wins over model.toml's slo_ms)
  hps_stack_args dlrm;  // --dlrm-model: also serve a DLRM through the parameter server
  std::string dlrm_name;
  int dlrm_instances = 2;

  /// Each model's admission control: limit from the SLO, capped at max_queue.
  serving::admission_options admission() const {
    serving::admission_options o;
    o.slo = std::chrono::milliseconds(slo_ms);
    o.max_queue = max_queue;
    return o;
  }
};

/// Blocks SIGINT and SIGTERM in this and every later thread (call before any
/// thread starts) so that serve_until_signal can wait for them.
void block_stop_signals();

/// Reads the token from `path`, or creates the file (mode 0600) with a random
/// token. Empty path: "" (Admin disabled). Refuses a token file other users may
/// read or write, naming its mode.
expected<std::string> admin_token(const std::string& path);

/// Adds the DLRM of `a.dlrm` (if any) to the gateway: stack, cache actor, instances.
/// The returned holder keeps the stack and the model alive.
struct dlrm_holder;
expected<std::shared_ptr<dlrm_holder>> add_dlrm(caf::actor_system& sys, actors::gateway& g,
                                                const front_door_args& a);

/// Admin.loadModel's loader of recommendation model directories (rec_models.hpp),
/// with --rec-workers workers and the server's admission settings.
std::function<expected<actors::rec_model_binding>(const std::string&, const std::string&)>
rec_loader(const front_door_args& a);

/// Loads every --rec-model NAME=DIR into the gateway (errors name the value or DIR).
status add_rec_models(actors::gateway& g, const front_door_args& a);

/// Everything recommendation a door serves: Admin.loadModel of recommendation
/// directories (besides `loader`'s GNN loads; `loader.load_rec` when set, else
/// rec_loader(a)), every --rec-model and the --dlrm-model. The holder keeps the DLRM's stack alive (null without one).
expected<std::shared_ptr<dlrm_holder>> add_rec_serving(caf::actor_system& sys, actors::gateway& g,
                                                       const front_door_args& a,
                                                       actors::model_loader loader = {});

/// Ok when --listen and --metrics bind loopback addresses; a non-loopback bind
/// is refused without --admin-token-file and warned about with one.
status check_exposure(const front_door_args& a);
/// The door flags checked before anything starts: --updates needs --dlrm-model
/// and a HOST:PORT; --tensor-models names sum or a recommendation model served.
status check_door_flags(const front_door_args& a);

/// Sends one small request to every model through the gateway (a warm-up
/// batch: first-touch of weights and features, the pipelines' arenas) and
/// fails naming the model whose answer is not ok.
status warm_up(actors::gateway& g);

/// Starts the RPC server on the gateway (after check_exposure), and the KServe
/// HTTP and gRPC doors when asked; warms every model, marks the gateway ready,
/// prints "listening HOST:PORT" (and "http ..."/"grpc ..."), waits for
/// SIGINT/SIGTERM, and stops the servers.
/// Signals in `also` are waited for too (a cluster member's "coordinator lost"
/// and "back"): `on_also(sig)` says whether to stop (none given: stop). The
/// signal that stopped it goes to `*stopped_by` when given.
status serve_until_signal(actors::gateway& g, const front_door_args& a, const std::string& token,
                          const std::vector<int>& also = {},
                          const std::function<bool(int)>& on_also = nullptr,
                          int* stopped_by = nullptr);

}  // namespace spindle::runtime
