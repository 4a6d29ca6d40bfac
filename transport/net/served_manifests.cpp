#include "transport/net/served_manifests.hpp"

#include <sys/stat.h>

#include "core/log.hpp"

namespace spindle::transport::net {
namespace {

file_stamp stamp_from(const struct stat& st) {
  return {std::uint64_t(st.st_size),
          std::uint64_t(st.st_mtim.tv_sec) * 1'000'000'000u + std::uint64_t(st.st_mtim.tv_nsec),
          std::uint64_t(st.st_ino), std::uint64_t(st.st_dev)};
}

std::string unit_key(const std::string& root, const std::string& unit) {
  return root + "\n" + unit;
}

}  // namespace

std::optional<file_stamp> stamp_of_fd(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return stamp_from(st);
}

expected<std::map<std::string, file_stamp>> served_manifests::stamps_now(const std::string& dir) {
  SPINDLE_ASSIGN_OR_RETURN(auto paths, folder_files(dir));
  std::map<std::string, file_stamp> out;
  for (auto& rel : paths) {
    struct stat st {};
    // lstat: a file swapped for a link since the listing is left out, as links are.
    if (::lstat((dir + "/" + rel).c_str(), &st) == 0 && S_ISREG(st.st_mode))
      out.emplace(std::move(rel), stamp_from(st));
  }
  return out;
}

std::optional<served_manifests::unit_state> served_manifests::cached(
    const std::string& key) const {
  spindle::lock_guard lock(mu_);
  auto it = units_.find(key);
  return it == units_.end() ? std::nullopt : std::optional(it->second);
}

expected<file_manifest> served_manifests::current(const std::string& root,
                                                  const std::string& dir,
                                                  const std::string& unit) {
  const std::string key = unit_key(root, unit);
  if (auto before = cached(key)) {
    SPINDLE_ASSIGN_OR_RETURN(auto now, stamps_now(dir));
    if (now == before->stamps) return before->manifest;
  }
  spindle::lock_guard hashing(hash_mu_);  // one folder at a time
  SPINDLE_ASSIGN_OR_RETURN(auto u, rehash(root, dir, unit, cached(key)));
  spindle::lock_guard lock(mu_);
  units_[key] = u;
  return u.manifest;
}

// Files whose stamp is as before keep their SHA-256; the others are hashed
// (their stamp taken first: a file written meanwhile shows changed next time).
expected<served_manifests::unit_state> served_manifests::rehash(
    const std::string& root, const std::string& dir, const std::string& unit,
    const std::optional<unit_state>& before) {
  SPINDLE_ASSIGN_OR_RETURN(auto stamps, stamps_now(dir));
  unit_state u;
  u.manifest.unit = unit;
  std::uint64_t changed = 0;
  for (const auto& [path, stamp] : stamps) {
    const file_entry* old = before ? before->manifest.find(path) : nullptr;
    if (old && before->stamps.at(path) == stamp) {
      u.manifest.files.push_back(*old);
      continue;
    }
    SPINDLE_ASSIGN_OR_RETURN(auto sha, file_sha256(dir + "/" + path));
    u.manifest.files.push_back({path, stamp.size, sha});
    if (old && old->sha256 != sha) {
      ++changed;
      log::warn("{}: {}/{} changed on disk since it was hashed ({} -> {} bytes, SHA-256 {} -> "
                "{}): served as it is now; a fetch holding the earlier manifest is refused",
                name_, dir, path, old->size, stamp.size, old->sha256.substr(0, 16),
                sha.substr(0, 16));
    } else if (!old && before) {
      log::info("{}: {}/{} appeared since '{}' {} was listed: served from now on", name_, dir,
                path, root, unit);
    }
  }
  if (before)
    for (const auto& f : before->manifest.files)
      if (!stamps.count(f.path)) {
        ++changed;
        log::warn("{}: {}/{} is gone from disk: no longer served", name_, dir, f.path);
      }
  u.stamps = std::move(stamps);
  spindle::lock_guard lock(mu_);
  changes_ += changed;
  return u;
}

std::optional<served_file> served_manifests::find(const std::string& root,
                                                  const std::string& unit,
                                                  const std::string& path) const {
  spindle::lock_guard lock(mu_);
  auto it = units_.find(unit_key(root, unit));
  if (it == units_.end()) return std::nullopt;
  const file_entry* e = it->second.manifest.find(path);
  if (!e) return std::nullopt;
  return served_file{*e, it->second.stamps.at(path)};
}

std::uint64_t served_manifests::changes() const {
  spindle::lock_guard lock(mu_);
  return changes_;
}

}  // namespace spindle::transport::net
