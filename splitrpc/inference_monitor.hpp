// SplitRPC's Inference Monitor (§3.2): the life of every call of one model as
// READY (control record accepted) -> RX_COMPLETE (payload landed in the tensor
// queue) -> WORK_COMPLETE (executor done) -> TX_COMPLETE (reply sent, forgotten).
// Transitions go one step forward only; anything else is an error naming the
// call and both states. Thread-safe (one mutex).
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "core/status.hpp"

namespace spindle::splitrpc {

enum class call_state : std::uint8_t { ready, rx_complete, work_complete, tx_complete };
std::string_view to_string(call_state s);

class inference_monitor {
 public:
  /// A new call in READY; an id already live is an error.
  status open(std::uint64_t call);
  /// Moves `call` to `to`, which must be its next state; TX_COMPLETE forgets it.
  status advance(std::uint64_t call, call_state to);
  std::optional<call_state> state(std::uint64_t call) const;
  /// Live calls per state (index = call_state), and calls completed so far.
  std::array<std::size_t, 4> live() const;
  std::uint64_t completed() const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::uint64_t, call_state> calls_;  // guarded by mu_
  std::array<std::size_t, 4> live_{};                    // guarded by mu_
  std::uint64_t completed_ = 0;                          // guarded by mu_
};

}  // namespace spindle::splitrpc
