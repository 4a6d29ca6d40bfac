// Models loaded at run time through a cluster node's door (Admin loadModel /
// unloadModel, KServe's repository calls). A recommendation model loads as on
// any server (the door's own loader). A GNN runs on this node:
// pipelines of its own over the cluster's shards (a feature reader of its own;
// other ranks' rows read as the cluster's GNN reads them) behind a batcher of
// its own, its PSGS routing timed on load when the node calibrates (--calibrate)
// and its fanouts tunable at this door. With a model repository (each rank its own
// folder in Triton's layout) a load without a directory serves the versions
// the repository's policy picks. The coordinator lists them, and every node with a door
// follows the list (model_follower), so a load or an unload through any door reaches every node.
// The GNN the ranks started with is the cluster's (one queue over every rank's pipelines) and stays
// pinned. Thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "actors/gateway.hpp"
#include "runtime/cluster_serving.hpp"

namespace spindle::runtime {

/// The call origin of a model_follower's loads and unloads.
inline constexpr const char* kFollowerOrigin = "cluster";
/// How the coordinator's list names a repository model: this prefix, the
/// versions served and when ("model-repository:2,1@1764340000000"); each rank
/// reads its own repository.
inline constexpr std::string_view kRepositoryMarker = "model-repository:";

class door_gnns {
 public:
  door_gnns(rank_context node, node_pipelines p);
  /// A door with no shard of the dataset (recommendation models only): it
  /// follows the list for recommendation models; GNN loads are refused by name.
  door_gnns(caf::actor_system& sys, caf::actor coordinator, std::string token);
  ~door_gnns();  // stops every loaded model's actors
  door_gnns(const door_gnns&) = delete;
  door_gnns& operator=(const door_gnns&) = delete;

  /// The loader a node's gateway calls: loads here, then tells the coordinator;
  /// recommendation models through `load_rec` (the door's own loader).
  using rec_load_fn = std::function<expected<actors::rec_model_binding>(const std::string&,
                                                                        const std::string&)>;
  actors::model_loader loader(serving::admission_options admission, rec_load_fn load_rec);
  using time_point = std::chrono::steady_clock::time_point;
  /// Names loaded or loading here, each with when the coordinator's list was
  /// known to hold it (time_point::max(): not yet, or never: then it is served
  /// at this door only and no follower may take it away).
  std::map<std::string, time_point> loaded() const;
  /// The coordinator's list: name -> model directory (or a repository marker).
  expected<std::map<std::string, std::string>> listed() const;
  /// The versions this door serves repository model `name` at, as the list's
  /// marker names them without its time ("model-repository:2,1"; "" when `name`
  /// is not a repository model here).
  std::string repository_marker(const std::string& name) const;
  /// The list marker this door last announced for `name` ("" if none).
  std::string announced(const std::string& name) const;
  /// A door without a shard (recommendation models only): the folders of models
  /// loaded here (served by the node's file door) and how a folder this disk
  /// lacks is fetched (as node_pipelines' `loaded` and `fetch_loaded`).
  void share_folders(std::shared_ptr<loaded_folders> loaded,
                     std::function<status(const std::string&, const std::string&)> fetch);

 private:
  struct model;
  expected<actors::gnn_model_binding> load(const std::string& name, const std::string& path,
                                           serving::admission_options admission);
  void unload(const std::string& key);
  /// --model-repository: one version of `name` loaded as NAME@VERSION.
  expected<actors::gnn_model_binding> load_version(const std::string& name,
                                                   const std::string& version,
                                                   serving::admission_options admission);
  bool serves_other_version(const std::string& name, const std::string& key) const;
  /// Tells the coordinator `name` is served from each rank's repository at `versions`.
  void announce_versions(const std::string& name, const std::vector<std::string>& versions);
  void mark_listed(const std::string& name);
  /// After a load through this door (not the follower's): tells the coordinator.
  void listed_after_load(const std::string& name, const std::string& path);
  status announce(std::string_view op, const std::string& name, const std::string& path) const;
  /// Before a load from `path`: fetched when this disk lacks it (--fetch-from).
  status fetch_folder(const std::string& name, const std::string& path) const;
  /// After: recorded for the file door (`path` empty: a repository version, not recorded).
  void served_from(const std::string& name, const std::string& path);

  caf::actor_system& sys_;
  caf::actor coordinator_;
  std::string token_;
  std::optional<rank_context> node_;  // none: this node serves no GNN
  node_pipelines p_;
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<model>> models_;  // guarded by mu_
  std::set<std::string> loading_;                         // guarded by mu_
  std::map<std::string, time_point> recs_;  // guarded by mu_: recommendation models loaded here
  std::map<std::string, std::string> markers_;  // guarded by mu_: repository models' markers
  std::map<std::string, std::string> announced_;  // guarded by mu_: the markers this door listed
};

}  // namespace spindle::runtime
