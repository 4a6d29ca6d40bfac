#include "client/door_spread.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

namespace spindle::client {
namespace {

namespace rpc = transport::rpc;
using clock = std::chrono::steady_clock;

// How long a door that went down waits before it is tried again: doubling
// while it stays down, up to the last.
constexpr std::chrono::milliseconds kFirstBackoff{250}, kLastBackoff{5000};
// Open loop: a door takes the calls due within this much of now at a time.
constexpr double kSliceS = 0.05;

// A call waiting for a door: its index in `calls`, when it is due (seconds
// after the start; open loop), and the door it already failed on (-1: none).
struct pending {
  std::size_t call = 0;
  double at = 0;
  int failed_on = -1;
};

// The calls not yet answered and the doors' health, shared by the door threads.
class spread {
 public:
  spread(const door_list& doors, std::size_t calls, const std::vector<double>& send_at,
         const rpc::gnn_callback& done)
      : doors_(doors), done_(done), total_(calls), up_(doors.endpoints.size(), false) {
    for (std::size_t i = 0; i < calls; ++i)
      queue_.push_back({i, send_at.empty() ? 0.0 : send_at[i], -1});
  }

  double elapsed() const { return std::chrono::duration<double>(clock::now() - start_).count(); }
  bool finished() {
    std::lock_guard lock(mu_);
    return settled_ == total_;
  }

  // The next calls for door `d`: up to `most`, and in an open loop those due
  // within kSliceS; a call that failed on `d` waits for another door while one
  // is up. Waits for work; empty once every call is answered.
  std::vector<pending> take(int d, std::size_t most, bool open) {
    std::unique_lock lock(mu_);
    for (;;) {
      if (settled_ == total_) return {};
      std::vector<pending> out;
      const double horizon = elapsed() + kSliceS;
      const bool others_up = std::count(up_.begin(), up_.end(), true) > 1;
      for (auto it = queue_.begin(); it != queue_.end() && out.size() < most;) {
        if (open && it->at > horizon) break;  // queued by schedule (retries first)
        if (it->failed_on == d && others_up) {
          ++it;
          continue;
        }
        out.push_back(*it);
        it = queue_.erase(it);
      }
      if (!out.empty()) return out;
      const double next_at = queue_.empty() ? kSliceS : std::max(0.0, queue_.front().at - horizon);
      cv_.wait_for(lock, std::chrono::duration<double>(std::min(next_at, kSliceS) + 1e-3));
    }
  }

  // Answer `r` to call `p` at door `d`: a call whose door went down goes back
  // to the queue once (to another door); returns false when so.
  bool answer(int d, const pending& p, const rpc::gnn_answer& r, double s) {
    std::lock_guard lock(mu_);
    const bool door_down =
        r.status == rpc::rpc_status::unavailable && r.message.rfind(rpc::kDoorDown, 0) == 0;
    if (door_down && p.failed_on < 0) {
      queue_.push_front({p.call, elapsed(), d});  // due now
      cv_.notify_all();
      return false;
    }
    answered_[doors_.endpoints[d]] += r.status == rpc::rpc_status::ok;
    done_(p.call, r, s);
    if (++settled_ == total_) cv_.notify_all();
    return !door_down;
  }

  // Door `d` is up or down. With every door down for longer than the call
  // timeout, the calls still queued are answered `unavailable`.
  void set_up(int d, bool up) {
    std::lock_guard lock(mu_);
    up_[d] = up;
    const bool any = std::count(up_.begin(), up_.end(), true) > 0;
    if (any || !all_down_since_) {
      all_down_since_ = any ? std::nullopt : std::optional(clock::now());
      cv_.notify_all();
      return;
    }
    if (clock::now() - *all_down_since_ < std::chrono::milliseconds(doors_.timeout_ms)) return;
    for (const auto& p : queue_) {
      done_(p.call, {rpc::rpc_status::unavailable, "no door is up: " + doors_.connect}, 0.0);
      ++settled_;
    }
    queue_.clear();
    cv_.notify_all();
  }

  // Sleeps up to `for_` unless every call is answered meanwhile.
  void pause(std::chrono::milliseconds for_) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, for_, [this] { return settled_ == total_; });
  }

  std::map<std::string, std::size_t> answered() {
    std::lock_guard lock(mu_);
    return answered_;
  }

 private:
  const door_list& doors_;
  const rpc::gnn_callback& done_;
  const clock::time_point start_ = clock::now();
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<pending> queue_;
  std::size_t settled_ = 0, total_;
  std::vector<bool> up_;
  std::optional<clock::time_point> all_down_since_;
  std::map<std::string, std::size_t> answered_;
};

// Runs `part` on `client`; false when the door went down meanwhile.
bool run_part(spread& sp, int d, rpc::rpc_client& client, const std::vector<pending>& part,
              const std::vector<rpc::gnn_call>& calls, std::size_t window, bool open) {
  std::vector<rpc::gnn_call> mine;
  std::vector<double> at;
  const double now = sp.elapsed();
  for (const auto& p : part) {
    mine.push_back(calls[p.call]);
    at.push_back(p.at - now);  // from this run's start: late calls go at once
  }
  bool up = true;
  auto local = [&](std::size_t k, const rpc::gnn_answer& r, double s) {
    up = sp.answer(d, part[k], r, s) && up;
  };
  const status st =
      open ? client.run_open_loop(mine, at, local) : client.run_closed_loop(mine, window, local);
  return up && st.is_ok();
}

// Door `d`'s thread: connects (again after a back-off while it is down) and
// runs the calls it takes until every call is answered.
void serve_door(spread& sp, const door_list& doors, int d, const std::vector<rpc::gnn_call>& calls,
                std::size_t window, bool open) {
  const std::string& e = doors.endpoints[d];
  std::unique_ptr<rpc::rpc_client> client;
  auto backoff = kFirstBackoff;
  bool was_down = false;
  while (!sp.finished()) {
    if (!client) {
      auto c = rpc::rpc_client::connect(e, doors.timeout_ms);
      if (!c) {
        if (!was_down)
          fmt::print(stderr,
                     "spindle: {}: {}; its calls go to the other doors (tried again "
                     "every {} ms or more)\n",
                     e, c.error().message(), backoff.count());
        was_down = true;
        sp.set_up(d, false);
        sp.pause(backoff);
        backoff = std::min(kLastBackoff, 2 * backoff);
        continue;
      }
      if (was_down) fmt::print(stderr, "spindle: {} answers again: it takes calls again\n", e);
      client = std::move(*c);
      was_down = false;
      backoff = kFirstBackoff;
      sp.set_up(d, true);
    }
    const auto part = sp.take(d, open ? 4096 : std::min<std::size_t>(4096, 32 * window), open);
    if (part.empty()) break;
    if (!run_part(sp, d, *client, part, calls, window, open)) {
      fmt::print(stderr, "spindle: {} went down: its calls go to the other doors\n", e);
      client.reset();
      was_down = true;
      sp.set_up(d, false);
    }
  }
}

}  // namespace

expected<std::map<std::string, std::size_t>> spread_calls(const door_list& doors,
                                                          const std::vector<rpc::gnn_call>& calls,
                                                          int clients,
                                                          const std::vector<double>& send_at,
                                                          const rpc::gnn_callback& done) {
  std::vector<std::string> tried;  // the doors that do not answer now, with why
  for (const auto& e : doors.endpoints)
    if (auto c = rpc::rpc_client::connect(e, doors.timeout_ms); !c)
      tried.push_back(fmt::format("{}: {}", e, c.error().message()));
  const int live = int(doors.endpoints.size() - tried.size());
  if (live == 0)
    return make_error(errc::unavailable, "--connect {}: no door answered ({})", doors.connect,
                      fmt::join(tried, "; "));
  spread sp(doors, calls.size(), send_at, done);
  // The in-flight window split between the doors that answer now.
  const std::size_t window = std::size_t(std::max(1, clients / live));
  std::vector<std::thread> threads;
  for (std::size_t d = 0; d < doors.endpoints.size(); ++d)
    threads.emplace_back(serve_door, std::ref(sp), std::cref(doors), int(d), std::cref(calls),
                         window, !send_at.empty());
  for (auto& t : threads) t.join();
  return sp.answered();
}

}  // namespace spindle::client
