#include "runtime/member_watch.hpp"

#include <pthread.h>

#include <nlohmann/json.hpp>

#include "actors/node_actor.hpp"

namespace spindle::runtime {

expected<std::map<int, member_info>> live_members(caf::actor_system& sys, const caf::actor& coord,
                                                  const std::string& token) {
  caf::scoped_actor self{sys};
  std::map<int, member_info> out;
  status st;
  self->request(coord, std::chrono::seconds(5), actors::status_atom::value, token)
      .receive(
          [&](const std::string& text) {
            for (const auto& m : nlohmann::json::parse(text))
              if (m["alive"].get<bool>())
                out[m["rank"].get<int>()] = {m["descriptor"].get<std::string>(),
                                             m.value("bridge", std::string()),
                                             m.value("ready", false),
                                             m.value("epoch", 0),
                                             m.value("old_descriptor", std::string()),
                                             m.value("old_epoch", -1),
                                             m.value("reading", 0),
                                             m.value("placement_error", std::string()),
                                             m.value("target", 0),
                                             m.value("fap", std::string()),
                                             m.value("address", std::string()),
                                             m.value("leaving", false),
                                             m.value("servers", 0),
                                             m.value("ranks", 0),
                                             m.value("from_epoch", 0),
                                             m.value("from_fap", std::string()),
                                             m.value("from_servers", 0),
                                             m.value("pipelines", 0),
                                             m.value("joins", 0),
                                             m.value("absent", std::uint64_t{0}),
                                             m.value("absent_next", std::uint64_t{0}),
                                             m.value("from_absent", std::uint64_t{0})};
          },
          [&](caf::error& e) { st = make_error(errc::unavailable, "status: {}", to_string(e)); });
  if (!st) return st;
  return out;
}

member_watch::member_watch(caf::actor_system& sys, caf::actor coordinator, std::string token,
                           member_view& view)
    : sys_(sys),
      coord_(std::move(coordinator)),
      token_(std::move(token)),
      view_(view),
      thread_([this] { run(); }) {}

std::uint64_t member_watch::on_change(change_fn f) {
  std::lock_guard lock(mu_);
  on_change_[next_id_] = std::move(f);
  return next_id_++;
}

std::uint64_t member_watch::on_poll(poll_fn f) {
  std::lock_guard lock(mu_);
  on_poll_[next_id_] = std::move(f);
  return next_id_++;
}

void member_watch::remove(std::uint64_t listener) {
  std::lock_guard lock(mu_);  // listeners run under it: none of them runs after this
  on_change_.erase(listener);
  on_poll_.erase(listener);
}

member_watch::~member_watch() {
  stop_.store(true);
  thread_.join();
}

void member_watch::run() {
  pthread_setname_np(pthread_self(), "member-watch");
  auto before = view_.snapshot();
  while (!stop_.load()) {
    if (auto now = live_members(sys_, coord_, token_); now) {
      std::lock_guard lock(mu_);
      if (*now != before) {
        view_.update(*now);
        for (const auto& [id, f] : on_change_) f(before, *now);
        before = std::move(*now);
      }
      for (const auto& [id, f] : on_poll_) f(before);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace spindle::runtime
