#include "runtime/model_follower.hpp"

#include <pthread.h>

#include "core/call_origin.hpp"
#include "core/log.hpp"

namespace spindle::runtime {

model_follower::model_follower(actors::gateway& gw, const door_gnns& gnns,
                               std::chrono::milliseconds period)
    : gw_(gw), gnns_(gnns), period_(period), thread_([this] { run(); }) {}

model_follower::~model_follower() {
  stop_ = true;
  thread_.join();
}

void model_follower::run() {
  pthread_setname_np(pthread_self(), "model-follow");
  scoped_call_origin origin(kFollowerOrigin);
  while (!stop_) {
    const auto asked = std::chrono::steady_clock::now();
    if (auto listed = gnns_.listed()) follow(*listed, asked);
    for (auto waited = std::chrono::milliseconds(0); waited < period_ && !stop_;
         waited += std::chrono::milliseconds(10))
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// Loads what the list holds and this door lacks; unloads what left the list,
// but only models known listed before the list was asked for (a model loaded
// here while the list was on its way is not in it yet).
void model_follower::follow(const std::map<std::string, std::string>& listed,
                            std::chrono::steady_clock::time_point asked) {
  const auto here = gnns_.loaded();
  for (const auto& [name, path] : listed) {
    const bool repository = path.starts_with(kRepositoryMarker);
    if (auto f = failed_.find(name); f != failed_.end() && f->second == path) continue;
    // A repository model is re-read once per load that succeeded at another door
    // (each lists a marker of its own); this door's own marker is its own load.
    const bool fresh = repository && seen_[name] != path && gnns_.announced(name) != path;
    if (repository) seen_[name] = path;
    if (here.count(name)) {
      if (fresh) resync(name, path);
      continue;
    }
    // A repository model: this door reads its own repository (a load without a directory).
    if (auto st = gw_.load_model(name, repository ? std::string() : path); !st) {
      log::warn("cluster model '{}' from {}: not served at this door: {}", name, path,
                st.message());
      failed_[name] = path;
    }
  }
  for (const auto& [name, since] : here) {
    if (listed.count(name) || since >= asked) continue;
    if (auto st = gw_.unload_model(name); !st && st.code() != errc::not_found)
      log::warn("cluster model '{}': not unloaded at this door: {}", name, st.message());
  }
  for (auto it = failed_.begin(); it != failed_.end();)
    it = listed.count(it->first) ? std::next(it) : failed_.erase(it);
  for (auto it = seen_.begin(); it != seen_.end();)
    it = listed.count(it->first) ? std::next(it) : seen_.erase(it);
}

// Another door served a repository model's versions anew: this door re-reads
// its own repository. Versions that still differ (this rank's repository is
// not the other's) are logged once and served as they are.
void model_follower::resync(const std::string& name, const std::string& listed) {
  if (auto st = gw_.load_model(name, ""); !st) {
    log::warn("cluster model '{}' ({}): not re-read at this door: {}", name, listed, st.message());
    failed_[name] = listed;
    return;
  }
  const std::string versions = listed.substr(0, listed.find('@'));
  if (const auto here = gnns_.repository_marker(name); here != versions) {
    log::warn("cluster model '{}': this door's repository gives {}, the cluster's list {}", name,
              here, listed);
    failed_[name] = listed;
  }
}

}  // namespace spindle::runtime
