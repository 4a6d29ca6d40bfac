#include "splitrpc/inference_monitor.hpp"

#include "core/enum_names.hpp"

namespace spindle::splitrpc {

constexpr enum_names<call_state, 4> kCallStates{{{
    {call_state::ready, "READY"}, {call_state::rx_complete, "RX_COMPLETE"},
    {call_state::work_complete, "WORK_COMPLETE"}, {call_state::tx_complete, "TX_COMPLETE"}}}};

std::string_view to_string(call_state s) { return kCallStates.name(s); }

status inference_monitor::open(std::uint64_t call) {
  std::lock_guard lock(mu_);
  if (!calls_.emplace(call, call_state::ready).second) {
    return make_error(errc::invalid_argument, "inference monitor: call {} is already live", call);
  }
  ++live_[0];
  return status::ok();
}

status inference_monitor::advance(std::uint64_t call, call_state to) {
  std::lock_guard lock(mu_);
  const auto it = calls_.find(call);
  if (it == calls_.end()) {
    return make_error(errc::invalid_argument, "inference monitor: call {} is not live (to {})",
                      call, to_string(to));
  }
  const auto from = it->second;
  if (static_cast<int>(to) != static_cast<int>(from) + 1) {
    return make_error(errc::invalid_argument, "inference monitor: call {} cannot go from {} to {}",
                      call, to_string(from), to_string(to));
  }
  --live_[static_cast<int>(from)];
  if (to == call_state::tx_complete) {
    calls_.erase(it);
    ++completed_;
  } else {
    it->second = to;
    ++live_[static_cast<int>(to)];
  }
  return status::ok();
}

std::optional<call_state> inference_monitor::state(std::uint64_t call) const {
  std::lock_guard lock(mu_);
  const auto it = calls_.find(call);
  if (it == calls_.end()) return std::nullopt;
  return it->second;
}

std::array<std::size_t, 4> inference_monitor::live() const {
  std::lock_guard lock(mu_);
  return live_;
}

std::uint64_t inference_monitor::completed() const {
  std::lock_guard lock(mu_);
  return completed_;
}

}  // namespace spindle::splitrpc
