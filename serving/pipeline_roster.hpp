// Which members' pipelines a cluster's shared queue (rank 0's batcher) feeds,
// as ranks join, leave, die and come back (as the same process or a new one):
// each membership change in, the changes to the queue's pipelines out. Not
// thread-safe: one caller (the member watch).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace spindle::serving {

/// What the coordinator's member list says about one live rank.
struct roster_member {
  bool serving = false;  // ready, with a bridge address its pipelines answer at
  bool leaving = false;  // asked to leave (`spindle cluster-leave`)
  bool joined = false;   // joined past the TOML's ranks (`node --join`)
  std::string bridge;    // where its pipelines answer
  // Which process holds the rank: changes whenever one joins as it (rank 0's count
  // of its joins), so a rank that died and came back between two lists is told apart.
  std::uint64_t incarnation = 0;

  bool operator==(const roster_member&) const = default;
};

enum class roster_action {
  add,    // a rank serves that the queue does not feed: give it stand-ins for its pipelines
  up,     // a rank the queue knows serves again (or at a new bridge address): feed it again
  down,   // a TOML rank stopped serving (died): no batches until it is back
  leave,  // a rank asked to leave: no new batches; those in flight are still answered
  gone,   // a joined rank died, a leaving one exited, or another process took the
          // rank: its stand-ins go, and its batches still in flight fail (to be
          // retried on another pipeline)
};

std::string_view to_string(roster_action a);

struct roster_change {
  int rank = 0;
  roster_action action = roster_action::add;
  std::string bridge;  // add and up: the rank's bridge address

  bool operator==(const roster_change&) const = default;
};

/// A TOML rank that stops serving is expected back (its stand-ins are kept and
/// marked down); a joined rank that dies or leaves is taken off the queue for good
/// (joining again, it is added again). A rank listed with another incarnation than
/// the one the queue feeds is a new process: the old one is gone (and the new one
/// added once it serves), whatever the lists in between showed. The coordinator's
/// own rank is never listed.
class pipeline_roster {
 public:
  explicit pipeline_roster(int own_rank = 0) : own_rank_(own_rank) {}

  /// The changes that bring the queue from the last list to `live` (the live
  /// members by rank), in rank order.
  std::vector<roster_change> update(const std::map<int, roster_member>& live);

  /// Ranks whose pipelines the queue holds (fed or marked down).
  std::vector<int> ranks() const;

 private:
  struct held {
    bool up = true;
    bool joined = false;
    bool leaving = false;  // fed no more; held until it exits
    std::string bridge;
    std::uint64_t incarnation = 0;
  };
  // Appends the change (if any) for `rank`, which the queue holds, listed as `m` (null: not live).
  void update_held(int rank, const roster_member* m, std::vector<roster_change>& out);
  int own_rank_;
  std::map<int, held> held_;
};

}  // namespace spindle::serving
