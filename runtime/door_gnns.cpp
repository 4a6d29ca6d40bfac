#include "runtime/door_gnns.hpp"

#include <fmt/ranges.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "actors/batcher_actor.hpp"
#include "actors/node_actor.hpp"
#include "core/call_origin.hpp"
#include "core/log.hpp"
#include "graph/metrics.hpp"
#include "runtime/model_repository.hpp"
#include "runtime/serving_assets.hpp"

namespace spindle::runtime {
namespace {

// A repository model's versions are loaded as NAME@VERSION.
std::string name_of(const std::string& key) { return key.substr(0, key.find('@')); }

}  // namespace

struct door_gnns::model {
  caf::actor_system* sys = nullptr;
  std::unique_ptr<serving_assets> assets;
  std::unique_ptr<cluster_features> features;
  std::vector<actors::pipeline_actor> pipelines;
  actors::batcher_actor batcher;
  serving::batch_policy batch;  // the node's, closing at this model's routing point
  time_point listed_since = time_point::max();
  ~model() {
    stop_and_wait(*sys, batcher);
    for (const auto& p : pipelines) stop_and_wait(*sys, p);  // they read features and assets
  }
};

door_gnns::door_gnns(rank_context node, node_pipelines p)
    : sys_(node.sys), coordinator_(node.coordinator), token_(node.token), node_(node),
      p_(std::move(p)) {
  // A loaded model is timed on load when the node calibrates (--calibrate);
  // --calibration-out stays the start model's file, and a --calibration file
  // timed another model: without --calibrate a loaded one routes by the fixed policy.
  p_.calibration_out.clear();
}

door_gnns::door_gnns(caf::actor_system& sys, caf::actor coordinator, std::string token)
    : sys_(sys), coordinator_(std::move(coordinator)), token_(std::move(token)) {}

void door_gnns::share_folders(
    std::shared_ptr<loaded_folders> loaded,
    std::function<status(const std::string&, const std::string&)> fetch) {
  p_.loaded = std::move(loaded);
  p_.fetch_loaded = std::move(fetch);
}

status door_gnns::fetch_folder(const std::string& name, const std::string& path) const {
  return p_.fetch_loaded && !path.empty() ? p_.fetch_loaded(name, path) : status::ok();
}

void door_gnns::served_from(const std::string& name, const std::string& path) {
  if (p_.loaded && !path.empty()) p_.loaded->add(name, path);
}

door_gnns::~door_gnns() {
  std::lock_guard lock(mu_);
  models_.clear();
}

std::map<std::string, door_gnns::time_point> door_gnns::loaded() const {
  std::lock_guard lock(mu_);
  std::map<std::string, time_point> out;
  for (const auto& name : loading_) out[name_of(name)] = time_point::max();
  for (const auto& [key, m] : models_) {  // a repository model once, whichever versions
    auto [it, fresh] = out.emplace(name_of(key), m->listed_since);
    if (!fresh) it->second = std::max(it->second, m->listed_since);
  }
  for (const auto& [name, since] : recs_) out[name] = since;
  return out;
}

void door_gnns::mark_listed(const std::string& name) {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mu_);
  for (auto& [key, m] : models_)
    if (name_of(key) == name) m->listed_since = now;
  if (auto it = recs_.find(name); it != recs_.end()) it->second = now;
}

// Following the list (model_follower), a model is listed already, and saying
// "add" again could bring back a model another door just unloaded.
void door_gnns::listed_after_load(const std::string& name, const std::string& path) {
  if (call_origin() == kFollowerOrigin) return mark_listed(name);
  // Every other node with a door follows the coordinator's list.
  if (auto st = announce("add", name, path); !st)
    log::warn("'{}' is served at this door only: {}", name, st.message());
  else
    mark_listed(name);
}

status door_gnns::announce(std::string_view op, const std::string& name,
                           const std::string& path) const {
  caf::scoped_actor self{sys_};
  status result;
  self->request(coordinator_, std::chrono::seconds(5), actors::models_atom::value,
                std::string(op), name, path, token_)
      .receive([](actors::ok_atom) {},
               [&](caf::error& e) {
                 result = make_error(errc::unavailable, "telling the coordinator ({} '{}'): {}",
                                     op, name, sys_.render(e));
               });
  return result;
}

expected<std::map<std::string, std::string>> door_gnns::listed() const {
  caf::scoped_actor self{sys_};
  expected<std::map<std::string, std::string>> out =
      make_error(errc::unavailable, "the coordinator did not answer");
  self->request(coordinator_, std::chrono::seconds(2), actors::models_atom::value, token_)
      .receive(
          [&](const std::string& text) {
            auto j = nlohmann::json::parse(text, nullptr, false);
            if (j.is_object()) out = j.get<std::map<std::string, std::string>>();
          },
          [&](caf::error& e) {
            out = make_error(errc::unavailable, "cluster models: {}", sys_.render(e));
          });
  return out;
}

expected<actors::gnn_model_binding> door_gnns::load(const std::string& name,
                                                    const std::string& path,
                                                    serving::admission_options admission) {
  if (!node_)
    return make_error(errc::invalid_argument,
                      "loading '{}' from {}: this node holds no shard of the cluster's dataset "
                      "(start it with --dataset and --model to serve GNNs); recommendation "
                      "models load here",
                      name, path);
  if (path.empty())
    return make_error(errc::invalid_argument,
                      "load '{}': give the model directory (this node has no --model-repository)",
                      name);
  const rank_context& node = *node_;
  {
    std::lock_guard lock(mu_);
    if (models_.count(name) || loading_.count(name))
      return make_error(errc::invalid_argument, "name '{}' is already loaded here", name);
    loading_.insert(name);
  }
  auto m = std::make_unique<model>();
  m->sys = &sys_;
  const auto& ds = node.shard.dataset();
  m->batch = p_.batch;
  status made = [&]() -> status {
    SPINDLE_ASSIGN_OR_RETURN(m->assets, load_assets(path, ds, p_));
    const auto members = node.view.snapshot();
    // Timed over the cluster's shards as the start model was (--calibrate).
    if (p_.calibrate)
      SPINDLE_TRY(calibrate_over_cluster(*m->assets, m->batch, node.shard, node.view, members, p_));
    SPINDLE_TRY(fill_device_rows(*m->assets, node.shard, node.view, members));
    SPINDLE_ASSIGN_OR_RETURN(m->features, cluster_features::create(node.shard, node.view, &members));
    SPINDLE_ASSIGN_OR_RETURN(m->pipelines,
                             spawn_pipelines(sys_, ds, *m->assets, *m->features, p_.pipelines));
    const auto* d = &ds;
    m->batcher = actors::spawn_batcher(
        sys_, m->pipelines, m->batch, m->assets->router,
        [d](const serving::gnn_request& r) { return serving::summed_psgs(*d, r); });
    return status::ok();
  }();
  std::lock_guard lock(mu_);
  loading_.erase(name);
  if (!made) return std::move(made).with_context(fmt::format("loading '{}' from {}: ", name, path));
  actors::gnn_model_binding b{name,     m->batcher, &ds, m->assets->model.get(), m->assets->router,
                              m->batch, admission};
  // Only this door's batcher feeds these pipelines (each door its own copy of
  // the model): fanouts change here alone, as on one server.
  b.cluster = false;
  b.device = m->assets->device.get();
  const auto* f = m->features.get();
  b.feature_rows = [f] { return std::make_pair(f->local_rows(), f->remote_rows()); };
  b.type_tables = m->assets->type_tables;
  models_[name] = std::move(m);
  return b;
}

void door_gnns::unload(const std::string& key) {
  std::unique_ptr<model> gone;
  {
    std::lock_guard lock(mu_);
    auto it = models_.find(key);
    if (it == models_.end()) return;
    gone = std::move(it->second);
    models_.erase(it);
    const std::string name = name_of(key);
    if (std::none_of(models_.begin(), models_.end(),
                     [&](const auto& m) { return name_of(m.first) == name; }))
      markers_.erase(name);
  }
  gone.reset();  // stops its batcher and pipelines, then frees what they read
  if (p_.type_pdb) p_.type_pdb->sweep();  // other weights' tables no model reads now
}

bool door_gnns::serves_other_version(const std::string& name, const std::string& key) const {
  std::lock_guard lock(mu_);
  return std::any_of(models_.begin(), models_.end(),
                     [&](const auto& m) { return m.first != key && name_of(m.first) == name; });
}

std::string door_gnns::repository_marker(const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = markers_.find(name);
  return it == markers_.end() ? std::string() : it->second;
}

// The list's marker: the versions, then when they were served, so that every
// successful load at a door reaches every other door, also one naming the same
// versions after a load that failed there.
void door_gnns::announce_versions(const std::string& name,
                                  const std::vector<std::string>& versions) {
  const std::string served = fmt::format("{}{}", kRepositoryMarker, fmt::join(versions, ","));
  {
    std::lock_guard lock(mu_);
    markers_[name] = served;
  }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  const std::string marker = fmt::format("{}@{}", served, ms);
  if (call_origin() != kFollowerOrigin) {
    std::lock_guard lock(mu_);
    announced_[name] = marker;
  }
  listed_after_load(name, marker);
}

std::string door_gnns::announced(const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = announced_.find(name);
  return it == announced_.end() ? std::string() : it->second;
}

// The gateway asks which versions to serve, loads and warms each one it lacks
// (load_version), retires the others, and only then says which it serves
// (versions_served, announce_versions): a refused load leaves the list as it was.
expected<actors::gnn_model_binding> door_gnns::load_version(const std::string& name,
                                                            const std::string& version,
                                                            serving::admission_options admission) {
  SPINDLE_ASSIGN_OR_RETURN(auto dir, repository_version_dir(p_.repository, name, version));
  const std::string key = fmt::format("{}@{}", name, version);
  SPINDLE_ASSIGN_OR_RETURN(auto b, load(key, dir, admission));
  b.name = name;
  b.key = key;
  b.version = version;
  return b;
}

actors::model_loader door_gnns::loader(serving::admission_options admission, rec_load_fn load_rec) {
  actors::model_loader l;
  l.load = [this, admission](const std::string& name,
                             const std::string& path) -> expected<actors::gnn_model_binding> {
    SPINDLE_ASSIGN_OR_RETURN(auto b, load(name, path, admission));
    served_from(name, path);
    listed_after_load(name, path);
    return b;
  };
  l.load_rec = [this, inner = std::move(load_rec)](
                   const std::string& name,
                   const std::string& path) -> expected<actors::rec_model_binding> {
    SPINDLE_ASSIGN_OR_RETURN(auto b, inner(name, path));
    served_from(name, path);
    {
      std::lock_guard lock(mu_);
      recs_[name] = time_point::max();
    }
    listed_after_load(name, path);
    return b;
  };
  l.fetch_folder = [this](const std::string& name, const std::string& path) {
    return fetch_folder(name, path);
  };
  l.rec_unloaded = [this](const std::string& name) {
    // Off the list before off this door's set: the follower must not see it
    // listed and missing here, and load it again.
    if (call_origin() != kFollowerOrigin)
      if (auto st = announce("remove", name, ""); !st)
        log::warn("'{}' unloaded at this door only: {}", name, st.message());
    if (p_.loaded) p_.loaded->remove(name);
    std::lock_guard lock(mu_);
    recs_.erase(name);
  };
  l.unload = [this](const std::string& key) {
    const std::string name = key.substr(0, key.find('@'));
    if (p_.loaded && key == name) p_.loaded->remove(name);
    // Off the list first, so no follower loads it again meanwhile (a follower's
    // own unload follows the list: it is off already).
    if (call_origin() == kFollowerOrigin) return unload(key);
    // A repository version retired while another serves the name: still listed.
    if (key != name && serves_other_version(name, key)) return unload(key);
    if (auto st = announce("remove", name, ""); !st)
      log::warn("'{}' unloaded at this door only: {}", name, st.message());
    unload(key);
  };
  if (p_.repository.empty()) return l;
  l.versions_to_serve = [dir = p_.repository, fetch = p_.fetch_versions](const std::string& name) {
    // Versions added at another rank's disk come first (nothing shared but the network).
    if (fetch)
      if (auto st = fetch(name); !st)
        log::warn("'{}': new versions not fetched, this rank's repository read as it is: {}", name,
                  st.message());
    return repository_versions_to_serve(dir, name);
  };
  l.load_version = [this, admission](const std::string& name, const std::string& version) {
    return load_version(name, version, admission);
  };
  l.versions_served = [this](const std::string& name, const std::vector<std::string>& versions) {
    announce_versions(name, versions);
  };
  return l;
}

}  // namespace spindle::runtime
