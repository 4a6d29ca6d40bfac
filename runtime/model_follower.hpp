// Keeps a cluster node's door serving the GNN models the coordinator lists
// (loaded at run time through any door; door_gnns): a thread polls the list
// every period, loads through the gateway what this door lacks and unloads what
// left the list, as an Admin call would ("admin via cluster"); a repository
// model whose listed versions differ from this door's is re-read from this
// rank's own repository. Failures are
// logged once per model and tried again at the next change of the list; a
// coordinator that does not answer is skipped until it does.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <thread>

#include "actors/gateway.hpp"
#include "runtime/door_gnns.hpp"

namespace spindle::runtime {

class model_follower {
 public:
  model_follower(actors::gateway& gw, const door_gnns& gnns,
                 std::chrono::milliseconds period = std::chrono::milliseconds(250));
  ~model_follower();  // stops and joins the thread
  model_follower(const model_follower&) = delete;
  model_follower& operator=(const model_follower&) = delete;

 private:
  void run();
  void follow(const std::map<std::string, std::string>& listed,
              std::chrono::steady_clock::time_point asked);
  void resync(const std::string& name, const std::string& listed);

  actors::gateway& gw_;
  const door_gnns& gnns_;
  std::chrono::milliseconds period_;
  std::map<std::string, std::string> failed_;  // name -> path whose load failed here
  std::map<std::string, std::string> seen_;    // name -> repository marker last followed
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace spindle::runtime
