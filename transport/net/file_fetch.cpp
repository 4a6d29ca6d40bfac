#include "transport/net/file_fetch.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "core/log.hpp"
#include "transport/net/file_client.hpp"
#include "transport/rpc/endpoint.hpp"

namespace spindle::transport::net {
namespace {

namespace fs = std::filesystem;
using fetch_clock = std::chrono::steady_clock;

// Where a fetch writes: the unit's final folder and its hidden staging folder.
struct fetch_places {
  std::string target, staging;
};

fetch_places places_of(const std::string& base, const std::string& unit) {
  fs::path t = fs::path(base).lexically_normal();
  if (t.has_filename() == false) t = t.parent_path();
  if (unit != ".") t /= unit;
  return {t.string(), (t.parent_path() / ("." + t.filename().string() + ".fetching")).string()};
}

status fsync_path(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return make_error(errc::io_error, "{}: {}", path, std::strerror(errno));
  ::fsync(fd);
  ::close(fd);
  return status::ok();
}

// One fetch in progress: the request, its manifest once known, the report.
class fetcher {
 public:
  // `manifest_only`: the first door's manifest is the result; nothing is written.
  explicit fetcher(const fetch_request& r, bool manifest_only = false)
      : r_(r), manifest_only_(manifest_only) {}
  const std::optional<file_manifest>& manifest() const { return manifest_; }

  expected<fetch_report> run() {
    auto deadline = fetch_clock::now() + std::chrono::seconds(r_.wait_s);
    std::set<std::string> refused;  // doors that refused the token: not asked again
    auto backoff = std::chrono::milliseconds(200);
    for (std::size_t turn = 0;; ++turn) {
      const std::string& peer = r_.peers[(first_ + turn) % r_.peers.size()];
      if (!refused.count(peer)) {
        const std::uint64_t before = report_.bytes;
        status st = from(peer);
        if (st.is_ok()) return report_;
        if (report_.bytes > before) {  // progress: the clock restarts, the same door first
          deadline = fetch_clock::now() + std::chrono::seconds(r_.wait_s);
          backoff = std::chrono::milliseconds(200);
          first_ = (first_ + turn) % r_.peers.size();
          turn = std::size_t(-1);
        }
        if (st.code() == errc::corrupt_data || st.code() == errc::io_error) return st;
        // A door that refused the token or holds nothing for this rank is not asked again.
        if (st.code() == errc::invalid_argument || st.code() == errc::not_found)
          refused.insert(peer);
        errors_[peer] = st.message();
        if (refused.size() == r_.peers.size()) return last_errors();
        if (st.code() == errc::unavailable && report_.bytes > 0) ++report_.reconnects;
      }
      if ((turn + 1) % r_.peers.size() == 0) {
        if (fetch_clock::now() > deadline) return last_errors();
        std::this_thread::sleep_for(backoff);
        backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
      }
    }
  }

 private:
  status last_errors() const {
    std::string all;
    for (const auto& [peer, why] : errors_) all += (all.empty() ? "" : "; ") + why;
    return make_error(errc::unavailable, "cannot fetch '{}' {} into {}: {}", r_.root,
                      r_.word.empty() ? fmt::format("for rank {}", r_.rank) : r_.word, r_.base,
                      all);
  }

  // Everything still missing, from one door; ok when the folder is in place.
  status from(const std::string& peer) {
    SPINDLE_ASSIGN_OR_RETURN(auto hp, parse_host_port(peer, "--fetch-from"));
    SPINDLE_ASSIGN_OR_RETURN(auto c, file_client::connect(hp.host, int(hp.port), r_.token));
    SPINDLE_ASSIGN_OR_RETURN(
        auto m, r_.word.empty() ? c.manifest(r_.root, r_.rank) : c.manifest(r_.root, r_.word));
    if (manifest_only_) {
      manifest_ = std::move(m);
      report_.peer = c.peer();
      return status::ok();
    }
    if (!manifest_) {
      manifest_ = m;
      where_ = places_of(r_.base, r_.at_base ? std::string(".") : m.unit);
      report_.target = where_.target;
      std::error_code ec;
      if (fs::is_directory(where_.target, ec) && fs::is_empty(where_.target, ec))
        fs::remove(where_.target, ec);  // an empty folder (a fresh volume's mount point): fill it
      if (fs::exists(where_.target, ec)) return in_place(c.peer(), m);
      log::info("fetching {} ({} files, {} bytes) from file door {} into {}", r_.root,
                m.files.size(), m.bytes(), c.peer(), where_.target);
      manifest_peer_ = c.peer();
    } else if (to_text(m) != to_text(*manifest_)) {
      return another_version(c.peer(), m);
    }
    report_.peer = c.peer();
    for (const auto& f : manifest_->files) SPINDLE_TRY(one_file(c, f));
    return finish();
  }

  // A door's manifest that differs from the one this fetch follows: the files
  // that differ are named and their partial bytes dropped. From the door the
  // fetch's manifest came from, its copy changed on its disk during the fetch:
  // refused (never old and new bytes in one folder); from another door, that
  // door holds another copy and the others are asked.
  status another_version(const std::string& peer, const file_manifest& now) {
    std::vector<std::string> differ;
    for (const auto& f : manifest_->files) {
      const file_entry* e = now.find(f.path);
      if (!e || e->size != f.size || e->sha256 != f.sha256) differ.push_back(f.path);
    }
    for (const auto& f : now.files)
      if (!manifest_->find(f.path)) differ.push_back(f.path);
    if (now.unit != manifest_->unit) differ.push_back("unit " + now.unit);
    std::string names;
    for (std::size_t i = 0; i < differ.size() && i < 5; ++i)
      names += (i ? ", " : "") + differ[i];
    if (differ.size() > 5) names += fmt::format(" and {} more", differ.size() - 5);
    if (peer != manifest_peer_)
      return make_error(errc::unavailable, "file door {} holds another version of '{}' ({})",
                        peer, r_.root, names);
    std::error_code ec;
    for (const auto& path : differ) fs::remove(where_.staging + "/" + path + ".part", ec);
    return make_error(errc::corrupt_data,
                      "file door {}: '{}' changed on the door's disk during this fetch ({}): "
                      "refused, nothing put in place; fetch again for the current copy",
                      peer, r_.root, names);
  }

  // The target already on this rank's disk (an earlier fetch, another process's,
  // or a copy put there by hand) is used only when it holds every file of the
  // door's manifest with its size and SHA-256: a stale or other folder would
  // answer wrong, so it is refused by name, never replaced (files the rank
  // wrote beside them, a graph log say, may stay).
  status in_place(const std::string& peer, const file_manifest& door) {
    SPINDLE_ASSIGN_OR_RETURN(auto have, list_folder(where_.target, door.unit));
    for (const auto& f : door.files) {
      const file_entry* mine = have.find(f.path);
      const char* why = !mine ? "is missing"
                        : mine->size != f.size || mine->sha256 != f.sha256 ? "differs"
                                                                           : nullptr;
      if (why)
        return make_error(errc::corrupt_data,
                          "{} is on this rank's disk, and its {} {} from file door {}'s copy: a "
                          "stale or other folder is not used; move it aside to fetch the door's",
                          where_.target, f.path, why, peer);
    }
    report_.peer = peer;
    report_.kept = door.files.size();
    return status::ok();
  }

  // A file whole in the staging folder and matching its checksum is kept (a
  // fetch cut after it); a ".part" continues from its size; a file whose
  // checksum fails comes again from byte 0, once.
  status one_file(file_client& c, const file_entry& f) {
    const std::string final_path = where_.staging + "/" + f.path, part = final_path + ".part";
    std::error_code ec;
    if (done_.count(f.path)) return status::ok();
    if (fs::exists(final_path, ec)) {
      auto sha = file_sha256(final_path);
      if (sha && *sha == f.sha256 && fs::file_size(final_path, ec) == f.size) {
        done_.insert(f.path);
        ++report_.kept;
        return status::ok();
      }
      fs::remove(final_path, ec);
    }
    fs::create_directories(fs::path(final_path).parent_path(), ec);
    if (ec) return make_error(errc::io_error, "{}: {}", final_path, ec.message());
    for (int attempt = 0;; ++attempt) {
      SPINDLE_TRY(receive(c, f, part));
      SPINDLE_ASSIGN_OR_RETURN(auto sha, file_sha256(part));
      if (sha == f.sha256) break;
      fs::remove(part, ec);
      if (attempt > 0)
        return make_error(errc::corrupt_data,
                          "{} from file door {}: SHA-256 {} twice differs from the door's "
                          "manifest ({}): refused (the door's copy changed or is damaged)",
                          f.path, c.peer(), sha.substr(0, 16), f.sha256.substr(0, 16));
      ++report_.refetched;
      log::warn("{} from file door {}: SHA-256 differs from the manifest: fetching it again",
                f.path, c.peer());
    }
    SPINDLE_TRY(fsync_path(part, O_RDONLY));
    fs::rename(part, final_path, ec);
    if (ec) return make_error(errc::io_error, "{}: {}", final_path, ec.message());
    done_.insert(f.path);
    ++report_.files;
    return status::ok();
  }

  // Appends the door's bytes of `f` to `part` from the size it has.
  status receive(file_client& c, const file_entry& f, const std::string& part) {
    std::error_code ec;
    std::uint64_t have = fs::exists(part, ec) ? fs::file_size(part, ec) : 0;
    if (have > f.size) have = 0;
    const int fd = ::open(part.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 || ::ftruncate(fd, off_t(have)) != 0 || ::lseek(fd, 0, SEEK_END) < 0) {
      const int e = errno;
      if (fd >= 0) ::close(fd);
      return make_error(errc::io_error, "{}: {}", part, std::strerror(e));
    }
    report_.resumed_from += have;
    auto sink = [&](const char* p, std::size_t n) {
      for (std::size_t off = 0; off < n;) {
        const ssize_t k = ::write(fd, p + off, n - off);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return make_error(errc::io_error, "{}: write: {}", part, std::strerror(errno));
        off += std::size_t(k);
      }
      report_.bytes += n;
      return status::ok();
    };
    status st = c.get(r_.root, manifest_->unit, f.path, have, sink, f.sha256);
    ::close(fd);
    // The door's file changed since this fetch's manifest: none of its bytes stay.
    if (st.code() == errc::corrupt_data) fs::remove(part, ec);
    return st;
  }

  // Only the manifest's files stay; the staging folder becomes the target.
  status finish() {
    std::error_code ec;
    std::vector<fs::path> stray;
    for (auto it = fs::recursive_directory_iterator(where_.staging, ec);
         it != fs::recursive_directory_iterator(); it.increment(ec)) {
      const auto rel = fs::relative(it->path(), where_.staging, ec).generic_string();
      if (!it->is_directory(ec) && !done_.count(rel)) stray.push_back(it->path());
    }
    for (const auto& p : stray) fs::remove(p, ec);
    SPINDLE_TRY(fsync_path(where_.staging, O_RDONLY | O_DIRECTORY));
    fs::rename(where_.staging, where_.target, ec);
    if (ec)
      return make_error(errc::io_error, "{} -> {}: {}", where_.staging, where_.target,
                        ec.message());
    return fsync_path(fs::path(where_.target).parent_path().string(), O_RDONLY | O_DIRECTORY);
  }

  const fetch_request& r_;
  const bool manifest_only_;
  std::size_t first_ = 0;
  std::optional<file_manifest> manifest_;
  std::string manifest_peer_;  // the door manifest_ came from
  fetch_places where_;
  std::set<std::string> done_;
  std::map<std::string, std::string> errors_;
  fetch_report report_;
};

}  // namespace

expected<fetch_report> fetch_folder(const fetch_request& r) {
  if (r.peers.empty()) return make_error(errc::invalid_argument, "no file door to fetch from");
  if (r.token.empty()) return make_error(errc::invalid_argument, "no cluster token to fetch with");
  return fetcher(r).run();
}

expected<file_manifest> fetch_manifest(const fetch_request& r) {
  if (r.peers.empty()) return make_error(errc::invalid_argument, "no file door to ask");
  if (r.token.empty()) return make_error(errc::invalid_argument, "no cluster token to ask with");
  fetcher f(r, true);
  SPINDLE_TRY(f.run().error_or_ok());
  return *f.manifest();
}

}  // namespace spindle::transport::net
