// A door that ships a node's data folders (its partition, its model) to ranks
// that prove the cluster token: a MAC'd manifest (sizes, SHA-256) and any file
// of it from a byte offset, nothing outside the folders it was given.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/status.hpp"

namespace spindle::transport::net {

struct file_root {
  std::string name;  // what a fetcher asks for: "dataset", "model"
  std::string dir;
  /// The sub-folder served to `rank` ("." for the whole folder), or an error
  /// saying why this folder holds nothing for that rank; empty: always ".".
  std::function<expected<std::string>(int rank)> unit_for;
  /// Instead of unit_for: the sub-folder served for the word a fetcher asks
  /// with (a model repository's "NAME/VERSION", "." for all of it), or an error.
  std::function<expected<std::string>(const std::string& word)> unit_named;
  /// Instead of `dir` and the two above: folders that come and go while the door
  /// serves (models loaded at run time), each its own unit named by the word a
  /// fetcher asks with (one path component); the folder it names now, or an error.
  std::function<expected<std::string>(const std::string& word)> folder_named;
};

struct file_door_options {
  std::string host = "127.0.0.1";  // loopback unless asked
  int port = 0;                    // 0: a free one
  std::string token;               // the cluster token both ends prove
  std::vector<file_root> roots;
  std::size_t max_connections = 8;  // connections that proved the token, served at once
  /// Connections yet to prove the token: at most this many from one address and
  /// max_unproven in all (past either the oldest of them is closed), each closed
  /// when it has not proven it within proof_deadline_ms. Strangers thus never
  /// take the max_connections slots of peers that hold the token.
  std::size_t max_unproven = 64, max_unproven_per_peer = 8;
  int proof_deadline_ms = 2000;
  /// Bytes per second the door sends in all (0: as fast as the link takes):
  /// files share the links that serve calls, so an operator may cap them.
  std::uint64_t max_bytes_per_s = 0;
  std::string name = "file-door";  // thread name and log lines
};

struct file_door_stats {
  std::uint64_t sessions = 0, refused = 0;  // connections that proved the token / did not
  std::uint64_t evicted = 0;  // unproven connections closed to make room (among `refused`)
  std::uint64_t files_sent = 0, bytes_sent = 0, requests_refused = 0;
  std::uint64_t files_changed = 0;  // served files found changed on disk and hashed again
};

/// Errors sent to a peer name paths relative to the served folders (the door's
/// log names them whole). A file changed on disk is hashed again before it is
/// served, logged once; a fetch holding the earlier manifest is refused, naming
/// it. Threads: "file-door" accepts, "file-conn" serves one connection each, at
/// background CPU priority (serving comes first); stats() is thread-safe.
class file_door {
 public:
  /// Listens on host:port and serves until destroyed.
  static expected<std::unique_ptr<file_door>> start(file_door_options o);
  ~file_door();  // stops accepting, closes every connection and joins its threads
  int port() const;
  file_door_stats stats() const;

  struct impl;

 private:
  explicit file_door(std::unique_ptr<impl> i);
  std::unique_ptr<impl> impl_;
};

}  // namespace spindle::transport::net
