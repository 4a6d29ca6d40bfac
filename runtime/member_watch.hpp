// Watches the coordinator's member list from its own thread (every 20 ms, CAF
// request over the middleman) and keeps a member_view current. One per node.
// Listeners run on that thread: change listeners with the old and new lists
// (to tell the bridge and batcher which ranks went down or came back), poll
// listeners after every poll (placement epochs, reports to the coordinator).
#pragma once

#include <caf/all.hpp>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/cluster_features.hpp"

namespace spindle::runtime {

/// Asks the coordinator once for its live members (rank > 0 and rank 0 itself).
/// The live members as the coordinator lists them; `token` is the cluster token.
expected<std::map<int, member_info>> live_members(caf::actor_system& sys, const caf::actor& coord,
                                                  const std::string& token);

class member_watch {
 public:
  using change_fn = std::function<void(const std::map<int, member_info>& before,
                                       const std::map<int, member_info>& now)>;
  using poll_fn = std::function<void(const std::map<int, member_info>& now)>;
  member_watch(caf::actor_system& sys, caf::actor coordinator, std::string token,
               member_view& view);
  /// Adds a listener; it runs until removed (remove() waits for a run in progress).
  std::uint64_t on_change(change_fn f);
  std::uint64_t on_poll(poll_fn f);
  void remove(std::uint64_t listener);
  ~member_watch();  // stops and joins
  member_watch(const member_watch&) = delete;
  member_watch& operator=(const member_watch&) = delete;

 private:
  void run();
  caf::actor_system& sys_;
  caf::actor coord_;
  std::string token_;
  member_view& view_;
  std::mutex mu_;
  std::uint64_t next_id_ = 1;
  std::map<std::uint64_t, change_fn> on_change_;
  std::map<std::uint64_t, poll_fn> on_poll_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace spindle::runtime
