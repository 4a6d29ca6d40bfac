// Fetching a folder a file door serves (file_door.hpp) onto this host's disk:
// from the first door of a list that holds it, every file checked against the
// door's SHA-256, resuming after a cut from the bytes already on disk, and
// made visible at once (a hidden ".NAME.fetching" folder renamed when whole),
// so a half-fetched folder is never taken as complete. Blocking; thread-safe
// for distinct targets.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "transport/net/file_manifest.hpp"

namespace spindle::transport::net {

struct fetch_request {
  std::vector<std::string> peers;  // HOST:PORT of file doors, tried in turn
  std::string token;               // the cluster token
  std::string root;                // what to ask for: "dataset", "model"
  int rank = 0;                    // whose share of it (a partition's rank-N)
  std::string word;                // asked instead of rank when set (a root served by name)
  std::string base;                // local folder: the door's unit lands at base or base/UNIT
  bool at_base = false;            // the unit lands at base itself (a folder served by name)
  int wait_s = 60;                 // retry for this long without a byte of progress
};

struct fetch_report {
  std::string target, peer;   // the folder written; the door the last bytes came from
  std::size_t files = 0;      // fetched now
  std::size_t kept = 0;       // already fetched whole (verified) before a cut
  std::size_t refetched = 0;  // failed their checksum once and came again from byte 0
  std::size_t reconnects = 0;
  std::uint64_t bytes = 0;         // received now
  std::uint64_t resumed_from = 0;  // bytes of partial files continued, not fetched again
};

/// Fetches root's unit for `rank` into `base`. A target already there is checked
/// against the door's manifest (sizes and SHA-256 of the door's files) and used
/// only when it matches; an empty one is filled. Refused by name: a target that
/// differs, a checksum that fails twice (the file and the door), a door's
/// refusal, a wrong token on every door, a local write error.
expected<fetch_report> fetch_folder(const fetch_request& r);

/// The manifest the first door that holds root's unit serves (the doors tried
/// in turn as fetch_folder tries them, for r.wait_s); nothing is written. A
/// model repository's "." lists every version a door holds.
expected<file_manifest> fetch_manifest(const fetch_request& r);

}  // namespace spindle::transport::net
