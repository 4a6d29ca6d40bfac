// The gateway: the serving system behind the RPC front door. It implements
// transport::rpc::rpc_service over the actors: GNN calls go to the model's
// batcher, recommendation calls to its DLRM inference actors (round robin).
// Admission control: a bounded number of calls in flight per model; beyond it a
// call is answered `overloaded` at once (backpressure, not unbounded memory).
// Deadlines become actor request timeouts. Live tunables change the batcher's
// policies and the parameter server's thresholds. Calls arrive on the RPC
// thread and never block it: a CAF actor forwards each call and fulfils its
// reply. Thread-safe. Implementation: gateway.cpp (service and calls),
// gateway_tunables.cpp, gateway_stats.cpp, over the state in gateway_state.hpp.
#pragma once

#include <caf/all.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "actors/hps_messages.hpp"
#include "actors/placement_actor.hpp"
#include "actors/router_actor.hpp"
#include "actors/serving_messages.hpp"
#include "actors/split_path.hpp"
#include "colocation/device_scheduler.hpp"
#include "colocation/hera/manager.hpp"
#include "core/access_log.hpp"
#include "hps/dlrm_hps.hpp"
#include "nn/type_rows.hpp"
#include "serving/admission.hpp"
#include "serving/express_lane.hpp"
#include "serving/worker_pool.hpp"
#include "transport/rpc/rpc_types.hpp"

namespace spindle::actors {

namespace detail {
struct gnn_entry;
}

struct gnn_model_binding {
  std::string name;
  batcher_actor batcher;
  const graph::dataset* dataset = nullptr;
  const nn::model* model = nullptr;
  std::shared_ptr<serving::psgs_router> router;
  serving::batch_policy policy;
  serving::admission_options admission;  // SLO, max_queue (the floor follows max_batch)
  placement_actor placement;  // a cluster's placement actor (re-plan tunables), or none
  router_actor routing;       // its router actor (routing tunables); none: set directly
  colocation::device_scheduler* device = nullptr;  // GNNSched's scheduler its forwards share, or none
  std::string version = "1";                  // the model repository's version served under `name`
  std::string key;  // the loader's name for it (NAME@VERSION); empty: `name`
  /// Served by a cluster (rank 0's door or a member's): every rank samples with the
  /// fanouts it started with, so the fanouts tunable is refused rather than changed
  /// on one rank's pipeline (its answers would differ from the other ranks').
  bool cluster = false;
  /// Served as the server started it (a cluster's GNN, whose pipelines every
  /// rank shares): Admin.unloadModel is refused by name. Loaded models are not.
  bool pinned = false;
  /// A cluster pipeline's feature rows read so far: {local, from other ranks}; unset: none.
  std::function<std::pair<std::uint64_t, std::uint64_t>()> feature_rows;
  /// A typed model's embedding tables read from the parameter server
  /// (--type-table-pdb): their counters; unset: it reads none.
  nn::type_table_stats_fn type_tables;
  /// Run to completion: a lone small call that finds the model idle runs on the
  /// thread that read it (serving/express_lane); null: every call goes to `batcher`.
  std::shared_ptr<serving::express_lane> express;
};

struct rec_model_binding {
  std::string name;
  /// Hera's worker pool: each worker runs whole batches through `runner`
  /// (resized live by the `workers` tunable and the node manager). When unset,
  /// calls go round robin to `instances` (DLRM inference actors).
  std::shared_ptr<serving::worker_pool> pool;
  std::shared_ptr<const hps::rec_runner> runner;
  /// Keeps what `runner` and `model` use alive (weights, tables) while the
  /// model is served; dropped when it is unloaded and its calls drained.
  std::shared_ptr<const void> owner;
  std::vector<dlrm_inference_actor> instances;
  embedding_cache_actor cache;
  const nn::model* model = nullptr;
  std::shared_ptr<hps::lookup_session> session;
  serving::admission_options admission;  // SLO, max_queue (the floor follows the instances)
  std::string version = "1";
  /// Served by another server (a Hera plan server): calls are checked against
  /// `remote_desc` and handed to `forward`, which answers each once; no model,
  /// pool or instances here.
  std::function<void(transport::rpc::rec_call, std::function<void(transport::rpc::rec_answer)>)>
      forward;
  std::shared_ptr<const config::model_desc> remote_desc;
};

/// How a server loads and frees GNN models for Admin.loadModel / unloadModel.
struct model_loader {
  /// Loads `path` as `name` and starts its actors; the binding goes to the gateway.
  std::function<expected<gnn_model_binding>(const std::string& name, const std::string& path)> load;
  /// Loads a recommendation model directory (model.toml says dlrm, ncf, wnd or
  /// din) as `name` with its worker pool; unset: such loads are refused. It is
  /// freed through the binding's `owner` once unloaded and drained.
  std::function<expected<rec_model_binding>(const std::string& name, const std::string& path)>
      load_rec;
  /// Stops the actors of the model loaded as `key` and frees it (its calls have finished).
  std::function<void(const std::string& key)> unload;
  /// Told after a recommendation model was unloaded and drained (a cluster door
  /// takes it off the cluster's model list); unset: nobody is told.
  std::function<void(const std::string& name)> rec_unloaded;
  /// With a model repository (unset without one): the versions `name` should be
  /// served at now, highest first (the first answers calls without a version),
  /// and a loader of one version (key NAME@VERSION).
  std::function<expected<std::vector<std::string>>(const std::string& name)> versions_to_serve;
  std::function<expected<gnn_model_binding>(const std::string& name, const std::string& version)>
      load_version;
  /// Told once `name` serves exactly `versions` (each loaded and warmed, the
  /// others retired), after a repository load that succeeded; unset: nobody.
  std::function<void(const std::string& name, const std::vector<std::string>& versions)>
      versions_served;
  /// Before a load from a folder (either kind): brings the folder to this
  /// node's disk when it lacks it (a cluster node fetches it from its peers'
  /// file doors); unset: the folder is read as it is.
  std::function<status(const std::string& name, const std::string& path)> fetch_folder;
};

class gateway final : public transport::rpc::rpc_service {
 public:
  explicit gateway(caf::actor_system& sys);
  ~gateway() override;
  /// Serves `m` under its name; a model repository version (key NAME@V) is also
  /// served under its key, and under NAME when it is the highest version so far.
  void add_model(gnn_model_binding m);
  void add_model(rec_model_binding m);
  /// The binding a recommendation model is served with (none: not served).
  std::optional<rec_model_binding> rec_binding(const std::string& name) const;
  /// Tensor models and the SplitRPC data path (optional).
  void set_split_path(std::unique_ptr<split_path> p);
  split_path* split() const;
  /// On a cluster's coordinator: where Admin.members gets the member list (a
  /// JSON array, as `spindle cluster-status` prints it). Default: this process.
  void set_members(std::function<std::string()> members);
  /// One line per inference call from now on (--access-log); null: none.
  void set_access_log(std::shared_ptr<access_log> log);
  /// Enables Admin.loadModel / unloadModel for GNN models.
  void set_model_loader(model_loader loader);
  caf::actor_system& system();
  /// Turns on the node resource manager for the recommendation models with a
  /// worker pool: `profiles` (Hera) holds each model's profile; models missing
  /// from it are named in the error. Each model starts with its admission SLO as
  /// SLA and may use up to `max_workers`.
  status set_node_manager(colocation::hera::manager_policy policy,
                          const colocation::hera::profile_table& profiles, int max_workers);
  /// One monitor-and-adjust period over every managed model (the colocation
  /// actor calls it every manager_period_ms). Returns the next period.
  std::chrono::milliseconds manage_step();
  /// Waits until no recommendation call is queued or running in a worker pool
  /// (after the front doors stopped: before what the models use is freed).
  void quiesce();
  /// Stopping: refuses new calls (`unavailable`, naming why) and waits up to
  /// `limit` for every admitted call to be answered, so the doors close with no
  /// call lost. Returns the calls still in flight at the limit.
  std::size_t drain_calls(std::chrono::milliseconds limit);
  /// One warm-up request through `b`'s batcher before it is reachable.
  status warm(const gnn_model_binding& b);
  /// Serves exactly the repository versions of `name` its policy picks now.
  status sync_versions(const std::string& name);
  /// Readiness (KServe /v2/health/ready, Admin.version): false until the server
  /// has loaded and warmed its models.
  void set_ready(bool ready);
  bool ready() override;

  void infer_gnn(transport::rpc::gnn_call call,
                 std::function<void(transport::rpc::gnn_answer)> done) override;
  void infer_rec(transport::rpc::rec_call call,
                 std::function<void(transport::rpc::rec_answer)> done) override;
  /// A door's turn: GNN calls without a deadline reach each batcher in one message.
  void begin_turn() override;
  void end_turn() override;
  std::string stats_json() override;
  std::vector<transport::rpc::model_info> models() override;
  std::optional<transport::rpc::model_info> model(const std::string& name) override;
  std::optional<transport::rpc::call_route> route(const std::string& name,
                                                  const std::string& version) override;
  expected<std::vector<transport::rpc::tunable>> tunables(const std::string& model) override;
  status set_tunable(const std::string& model, const std::string& name,
                     const std::string& value) override;
  std::string members_json() override;
  status load_model(const std::string& name, const std::string& path) override;
  status unload_model(const std::string& name) override;
  void infer_tensor(const std::string& model, std::span<const std::byte> payload,
                    std::uint32_t deadline_us,
                    std::function<void(transport::rpc::tensor_answer)> done) override;
  expected<transport::rpc::split_session> open_split() override;
  void infer_split(const std::string& model, std::uint64_t call_id, std::uint64_t bytes,
                   std::uint32_t deadline_us,
                   std::function<void(transport::rpc::tensor_answer)> done) override;
  /// Takes graph updates into `g` (Admin.updateGraph); unset: they are refused.
  /// `g` must outlive the gateway.
  /// `doors_update` false: calls read it (versions, min_version) but update
  /// calls are refused (a cluster rank's graph changes through its stream only).
  void set_live_graph(graph::live_graph* g, bool doors_update = true);
  /// What the graph's update stream follower has done (stats' graph.stream).
  void set_graph_stream(std::function<graph::stream_follow_stats()> stats);
  transport::rpc::graph_edit_answer update_graph(transport::rpc::graph_edit edit) override;
  transport::rpc::graph_edit_answer graph_version() override;
  /// Prometheus text exposition of every model's counters and histograms.
  std::string prometheus_text();

  struct state;

 private:
  /// `done` for a call with a min_version: an answer computed on an older graph
  /// (another rank's) sends the call again, a few times, then is refused.
  std::function<void(transport::rpc::gnn_answer)> at_version(
      std::shared_ptr<detail::gnn_entry> e, transport::rpc::gnn_call call,
      std::function<void(transport::rpc::gnn_answer)> done, int tries);
  /// infer_gnn once its min_version holds (or will not: then refused).
  void infer_gnn_now(transport::rpc::gnn_call call, std::function<void(transport::rpc::gnn_answer)> done);
  /// Parks a call whose min_version is not applied yet, until it is or its
  /// deadline passes (gateway_graph.cpp).
  void wait_for_version(transport::rpc::gnn_call call, std::function<void(transport::rpc::gnn_answer)> done);
  status apply_tunable(const std::string& model, const std::string& name,
                       const std::string& value);
  status load_rec(const std::string& name, const std::string& path);
  status unload_rec(const std::string& name);

  std::unique_ptr<state> s_;
};

}  // namespace spindle::actors
