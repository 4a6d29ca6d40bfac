#include "serving/pipeline_roster.hpp"

#include <set>

namespace spindle::serving {

std::string_view to_string(roster_action a) {
  switch (a) {
    case roster_action::add:
      return "add";
    case roster_action::up:
      return "up";
    case roster_action::down:
      return "down";
    case roster_action::leave:
      return "leave";
    case roster_action::gone:
      return "gone";
  }
  return "unknown";
}

namespace {

bool feeds(const roster_member* m) { return m && m->serving && !m->leaving; }

}  // namespace

std::vector<roster_change> pipeline_roster::update(const std::map<int, roster_member>& live) {
  std::set<int> ranks;
  for (const auto& [rank, m] : live) ranks.insert(rank);
  for (const auto& [rank, h] : held_) ranks.insert(rank);
  std::vector<roster_change> out;
  for (const int rank : ranks) {
    if (rank == own_rank_) continue;
    const auto it = live.find(rank);
    const roster_member* m = it == live.end() ? nullptr : &it->second;
    auto h = held_.find(rank);
    if (h != held_.end() && m && m->incarnation != h->second.incarnation) {
      // Another process took the rank since the last list (the one fed died, or left
      // and exited): whatever it was, that one is gone; the new one is added below.
      out.push_back({rank, roster_action::gone, {}});
      held_.erase(h);
      h = held_.end();
    }
    if (h != held_.end()) {
      update_held(rank, m, out);
    } else if (feeds(m)) {  // not serving yet, or leaving before the queue ever fed it: none
      held_[rank] = {true, m->joined, false, m->bridge, m->incarnation};
      out.push_back({rank, roster_action::add, m->bridge});
    }
  }
  return out;
}

void pipeline_roster::update_held(int rank, const roster_member* m,
                                  std::vector<roster_change>& out) {
  const auto h = held_.find(rank);
  if (h->second.leaving) {
    if (m) return;  // it exits once every other member reads the plan without it
    out.push_back({rank, roster_action::gone, {}});
    held_.erase(h);
  } else if (feeds(m)) {
    if (h->second.up && h->second.bridge == m->bridge) return;
    h->second.up = true;
    h->second.bridge = m->bridge;
    out.push_back({rank, roster_action::up, m->bridge});
  } else if (m && m->leaving) {
    h->second.leaving = true;
    out.push_back({rank, roster_action::leave, {}});
  } else if (h->second.joined) {
    out.push_back({rank, roster_action::gone, {}});
    held_.erase(h);
  } else if (h->second.up) {
    h->second.up = false;
    out.push_back({rank, roster_action::down, {}});
  }
}

std::vector<int> pipeline_roster::ranks() const {
  std::vector<int> out;
  for (const auto& [rank, h] : held_) out.push_back(rank);
  return out;
}

}  // namespace spindle::serving
