#include "apps/commands/member_watch.hpp"

#include <pthread.h>

#include <nlohmann/json.hpp>

#include "actors/node_actor.hpp"

namespace spindle::apps {

expected<std::map<int, member_info>> live_members(caf::actor_system& sys, const caf::actor& coord) {
  caf::scoped_actor self{sys};
  std::map<int, member_info> out;
  status st;
  self->request(coord, std::chrono::seconds(5), actors::status_atom::value)
      .receive(
          [&](const std::string& text) {
            for (const auto& m : nlohmann::json::parse(text))
              if (m["alive"].get<bool>())
                out[m["rank"].get<int>()] = {m["descriptor"].get<std::string>(),
                                             m.value("bridge", std::string()),
                                             m.value("ready", false)};
          },
          [&](caf::error& e) { st = make_error(errc::unavailable, "status: {}", to_string(e)); });
  if (!st) return st;
  return out;
}

member_watch::member_watch(caf::actor_system& sys, caf::actor coordinator, member_view& view,
                           change_fn on_change)
    : sys_(sys),
      coord_(std::move(coordinator)),
      view_(view),
      on_change_(std::move(on_change)),
      thread_([this] { run(); }) {}

member_watch::~member_watch() {
  stop_.store(true);
  thread_.join();
}

void member_watch::run() {
  pthread_setname_np(pthread_self(), "member-watch");
  auto before = view_.snapshot();
  while (!stop_.load()) {
    if (auto now = live_members(sys_, coord_); now) {
      if (*now != before) {
        view_.update(*now);
        if (on_change_) on_change_(before, *now);
        before = std::move(*now);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace spindle::apps
