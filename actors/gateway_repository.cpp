// The gateway's model repository: loading a model folder at run time (checked,
// warmed, then reachable), versions kept in step with the repository, unloading
// after the calls in flight finish, and the model list every door describes.
#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <thread>

#include "actors/gateway.hpp"
#include "actors/gateway_state.hpp"
#include "core/call_origin.hpp"
#include "core/log.hpp"

namespace spindle::actors {

using clock_type = std::chrono::steady_clock;

namespace {

status check_model_name(const std::string& name) {
  if (name.empty() || name.size() > 64)
    return make_error(errc::invalid_argument, "name '{}': 1 to 64 characters", shown(name));
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.')
      return make_error(errc::invalid_argument, "name '{}': letters, digits, '_', '-' and '.' only",
                        shown(name));
  if (name.find_first_not_of('.') == std::string::npos)  // '.' and '..' read as paths
    return make_error(errc::invalid_argument, "name '{}': not a name of dots only", shown(name));
  return status::ok();
}

}  // namespace

namespace {

// Calls in flight on `e` finish before its actors stop (nothing is lost).
void drain(const std::string& name, gnn_entry& e) {
  const auto until = clock_type::now() + std::chrono::seconds(10);
  while (e.admission.in_flight() > 0 && clock_type::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (e.admission.in_flight() > 0)
    log::warn("admin: unloading '{}' with {} calls still in flight after 10 s", name,
              e.admission.in_flight());
}

const std::string& key_of(const gnn_model_binding& b) { return b.key.empty() ? b.name : b.key; }

}  // namespace

status gateway::load_model(const std::string& name, const std::string& path) {
  SPINDLE_TRY(check_model_name(name));
  if (!path.empty()) {
    // Before its model.toml is read: that says which kind of model it is. One
    // fetch at a time (two loads of a folder must not write its staging folder
    // together; the second finds it in place), outside the load lock.
    if (s_->loader.fetch_folder) {
      spindle::lock_guard one_fetch(s_->fetching);
      SPINDLE_TRY(s_->loader.fetch_folder(name, path));
    }
    auto d = config::load_model_desc(path);
    if (d && d->is_rec()) return load_rec(name, path);
    if (!d && !s_->loader.load) return d.error();  // no GNN loader to say it instead
  }
  if (!s_->loader.load) return rpc_service::load_model(name, path);
  spindle::lock_guard one_at_a_time(s_->loading);
  if (s_->rec_of(name))
    return make_error(errc::invalid_argument,
                      "name '{}' is a recommendation model (unload it first)", name);
  if (path.empty() && s_->loader.versions_to_serve) return sync_versions(name);
  if (s_->gnn_of(name))
    return make_error(errc::invalid_argument, "name '{}' is already loaded (unload it first)",
                      name);
  SPINDLE_ASSIGN_OR_RETURN(auto binding, s_->loader.load(name, path));
  binding.name = name;
  if (auto st = warm(binding); !st) {
    s_->loader.unload(key_of(binding));
    return st;
  }
  add_model(binding);
  log::info("admin via {}: loaded model '{}' from {}", call_origin(), name, path);
  return status::ok();
}

// A model repository's load: serve exactly the versions `name`'s policy picks
// now. New versions are loaded and warmed before any call reaches them; then
// the name serves the highest picked version, and versions no longer picked
// leave the maps, drain their calls in flight and are unloaded.
status gateway::sync_versions(const std::string& name) {
  SPINDLE_ASSIGN_OR_RETURN(auto wanted, s_->loader.versions_to_serve(name));
  std::map<std::string, std::shared_ptr<gnn_entry>> have;  // version -> entry
  {
    spindle::shared_lock lock(s_->models_mu);
    for (const auto& [key, e] : s_->gnn)
      if (key.starts_with(name + "@")) have[e->b.version] = e;
  }
  for (const auto& v : wanted) {
    if (have.count(v)) continue;
    SPINDLE_ASSIGN_OR_RETURN(auto binding, s_->loader.load_version(name, v));
    if (auto st = warm(binding); !st) {
      s_->loader.unload(key_of(binding));
      return st;
    }
    add_model(binding);
    log::info("admin via {}: serving model '{}' version {}", call_origin(), name, v);
  }
  std::vector<std::shared_ptr<gnn_entry>> retired;
  {
    spindle::lock_guard lock(s_->models_mu);
    s_->gnn[name] = s_->gnn.at(name + "@" + wanted.front());  // calls without a version
    for (const auto& [v, e] : have) {
      if (std::find(wanted.begin(), wanted.end(), v) != wanted.end()) continue;
      s_->gnn.erase(name + "@" + v);
      retired.push_back(e);
    }
  }
  for (const auto& e : retired) {
    drain(name, *e);
    s_->loader.unload(key_of(e->b));
    log::info("admin via {}: version {} of '{}' drained and unloaded", call_origin(), e->b.version,
              name);
  }
  if (s_->loader.versions_served) s_->loader.versions_served(name, wanted);
  return status::ok();
}

status gateway::unload_model(const std::string& name) {
  if (s_->rec_of(name)) return unload_rec(name);
  const auto pinned = s_->gnn_of(name);
  if ((pinned && pinned->b.pinned) || (!s_->loader.unload && pinned))
    return make_error(errc::invalid_argument,
                      "model '{}' is served as this server started it (a cluster's GNN: restart "
                      "its ranks with another --model); it cannot be unloaded here",
                      shown(name));
  if (!s_->loader.unload)
    return make_error(errc::not_found, "unknown model '{}' (loaded: {})", shown(name),
                      s_->loaded());
  spindle::lock_guard one_at_a_time(s_->loading);
  std::vector<std::shared_ptr<gnn_entry>> gone;
  {
    spindle::lock_guard lock(s_->models_mu);
    auto it = s_->gnn.find(name);
    if (it == s_->gnn.end() || name.find('@') != std::string::npos)
      return make_error(errc::not_found, "unknown GNN model '{}' (loaded: {})", shown(name),
                        s_->loaded_locked());
    gone.push_back(it->second);
    s_->gnn.erase(it);  // new calls get "unknown model" from here on
    for (auto v = s_->gnn.begin(); v != s_->gnn.end();) {  // and every version of it
      if (!v->first.starts_with(name + "@")) {
        ++v;
        continue;
      }
      if (v->second != gone.front()) gone.push_back(v->second);
      v = s_->gnn.erase(v);
    }
  }
  for (const auto& e : gone) {
    drain(name, *e);
    s_->loader.unload(key_of(e->b));
  }
  log::info("admin via {}: unloaded model '{}'", call_origin(), name);
  return status::ok();
}

namespace {

transport::rpc::model_info info_of(const std::string& name, const gnn_entry& e,
                                   std::vector<std::string> versions) {
  const auto& d = e.b.model->desc();
  transport::rpc::model_info m{name,
                               "gnn",
                               std::string(config::to_string(d.arch)),
                               std::uint32_t(d.in),
                               std::uint32_t(d.out),
                               0,
                               e.b.version,
                               {}};
  m.task = d.task;
  for (const auto& o : d.types.outputs) m.node_types.push_back(o.node_type);
  m.pair_types = d.types.pair_types;
  m.versions = std::move(versions);
  if (std::find(m.versions.begin(), m.versions.end(), e.b.version) == m.versions.end())
    m.versions.push_back(e.b.version);
  std::sort(m.versions.begin(), m.versions.end(), [](const auto& x, const auto& y) {
    return std::atoi(x.c_str()) > std::atoi(y.c_str());
  });
  return m;
}

transport::rpc::model_info info_of(const std::string& name, const rec_entry& e) {
  const auto& d = rec_desc(e);
  // kind "dlrm" is the protocol's name for every recommendation model (capnp
  // schema: "gnn" or "dlrm"); arch says which one.
  return {name,
          "dlrm",
          std::string(config::to_string(d.arch)),
          std::uint32_t(d.dense_in),
          1,
          std::uint32_t(d.table_rows.size()),
          e.b.version,
          {},
          std::vector<std::uint64_t>(d.table_rows.begin(), d.table_rows.end())};
}

}  // namespace

std::vector<transport::rpc::model_info> gateway::models() {
  std::vector<transport::rpc::model_info> out;
  std::map<std::string, std::vector<std::string>> versions;  // repository versions by name
  const auto all = s_->gnn_all();
  for (const auto& [key, e] : all)
    if (const auto at = key.find('@'); at != std::string::npos)
      versions[key.substr(0, at)].push_back(e->b.version);
  for (const auto& [name, e] : all)
    if (name.find('@') == std::string::npos)  // NAME@V is listed as a version of NAME
      out.push_back(info_of(name, *e, versions[name]));
  for (const auto& [name, e] : s_->rec_all()) out.push_back(info_of(name, *e));
  return out;
}

// The KServe doors ask this on every call: one name's entry and its versions,
// not the whole model list.
std::optional<transport::rpc::model_info> gateway::model(const std::string& name) {
  if (name.find('@') != std::string::npos) return std::nullopt;
  if (auto r = s_->rec_of(name)) return info_of(name, *r);
  std::shared_ptr<gnn_entry> e;
  std::vector<std::string> versions;
  {
    spindle::shared_lock lock(s_->models_mu);
    auto it = s_->gnn.find(name);
    if (it == s_->gnn.end()) return std::nullopt;
    e = it->second;
    const std::string prefix = name + "@";
    for (auto v = s_->gnn.lower_bound(prefix); v != s_->gnn.end() && v->first.starts_with(prefix);
         ++v)
      versions.push_back(v->second->b.version);
  }
  return info_of(name, *e, std::move(versions));
}

// The doors ask this on every call: one map lookup under the shared lock, no
// version list (model() builds that for metadata).
std::optional<transport::rpc::call_route> gateway::route(const std::string& name,
                                                         const std::string& version) {
  if (name.find('@') != std::string::npos) return std::nullopt;
  if (auto r = s_->rec_of(name)) {
    if (!version.empty() && version != r->b.version) return std::nullopt;
    const auto& d = rec_desc(*r);
    return transport::rpc::call_route{false, name, r->b.version, std::uint32_t(d.dense_in),
                                      std::uint32_t(d.table_rows.size())};
  }
  spindle::shared_lock lock(s_->models_mu);
  auto it = s_->gnn.find(name);
  if (it == s_->gnn.end()) return std::nullopt;
  const bool link = it->second->b.model->desc().scores_links();
  if (version.empty() || version == it->second->b.version)
    return transport::rpc::call_route{true, name, it->second->b.version, 0, 0, link};
  const std::string key = name + "@" + version;
  const auto other = s_->gnn.find(key);
  if (other == s_->gnn.end()) return std::nullopt;
  return transport::rpc::call_route{true, key, version, 0, 0,
                                    other->second->b.model->desc().scores_links()};
}

}  // namespace spindle::actors
