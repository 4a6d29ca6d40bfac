// The file door's manifests, one per unit it served, kept while their files stay
// as they were (size, mtime, inode checked before serving); a changed file is
// hashed again, logged once naming it, so a later fetch gets the current bytes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "core/status.hpp"
#include "core/thread_annotations.hpp"
#include "transport/net/file_manifest.hpp"

namespace spindle::transport::net {

/// What tells a file changed without reading it.
struct file_stamp {
  std::uint64_t size = 0, mtime_ns = 0, inode = 0, device = 0;
  bool operator==(const file_stamp&) const = default;
};
/// The stamp of an open descriptor; nullopt when it is not a regular file.
std::optional<file_stamp> stamp_of_fd(int fd);

/// A file of a served manifest and the stamp it had when it was hashed.
struct served_file {
  file_entry entry;
  file_stamp stamp;
};

/// Thread-safe; one folder is hashed at a time, transfers go on meanwhile.
class served_manifests {
 public:
  explicit served_manifests(std::string door_name) : name_(std::move(door_name)) {}

  /// The manifest of `dir` served as root `root`'s unit `unit`: hashed on first
  /// use; after that the files whose stamp changed, and files added or removed,
  /// are listed and hashed again, each change logged once naming the file.
  expected<file_manifest> current(const std::string& root, const std::string& dir,
                                  const std::string& unit);
  /// `path` of a unit served before, as last hashed; nullopt when the unit was
  /// never listed or holds no such file.
  std::optional<served_file> find(const std::string& root, const std::string& unit,
                                  const std::string& path) const;
  /// Files found changed on disk since they were first hashed (once per change).
  std::uint64_t changes() const;

 private:
  struct unit_state {
    file_manifest manifest;
    std::map<std::string, file_stamp> stamps;  // by path
  };
  std::optional<unit_state> cached(const std::string& key) const;
  /// Stamps of `dir`'s files now; equal to `u`'s when nothing changed.
  static expected<std::map<std::string, file_stamp>> stamps_now(const std::string& dir);
  expected<unit_state> rehash(const std::string& root, const std::string& dir,
                              const std::string& unit, const std::optional<unit_state>& before);

  std::string name_;
  mutable spindle::mutex mu_;
  std::map<std::string, unit_state> units_ SPINDLE_GUARDED_BY(mu_);  // by root and unit
  std::uint64_t changes_ SPINDLE_GUARDED_BY(mu_) = 0;
  spindle::mutex hash_mu_;  // held while a folder is hashed
};

}  // namespace spindle::transport::net
