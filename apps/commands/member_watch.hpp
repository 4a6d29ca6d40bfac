// Watches the coordinator's member list from its own thread (every 20 ms, CAF
// request over the middleman) and keeps a member_view current; `on_change`
// runs on that thread with the old and new lists, so the caller can tell its
// bridge and batcher which ranks went down or came back.
#pragma once

#include <caf/all.hpp>
#include <functional>
#include <thread>

#include "apps/commands/cluster_features.hpp"

namespace spindle::apps {

/// Asks the coordinator once for its live members (rank > 0 and rank 0 itself).
expected<std::map<int, member_info>> live_members(caf::actor_system& sys, const caf::actor& coord);

class member_watch {
 public:
  using change_fn = std::function<void(const std::map<int, member_info>& before,
                                       const std::map<int, member_info>& now)>;
  member_watch(caf::actor_system& sys, caf::actor coordinator, member_view& view,
               change_fn on_change = {});
  ~member_watch();  // stops and joins
  member_watch(const member_watch&) = delete;
  member_watch& operator=(const member_watch&) = delete;

 private:
  void run();
  caf::actor_system& sys_;
  caf::actor coord_;
  member_view& view_;
  change_fn on_change_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace spindle::apps
