#include "runtime/rank_files.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <chrono>
#include <set>
#include <thread>

#include "core/log.hpp"
#include "transport/net/file_fetch.hpp"
#include "transport/rpc/endpoint.hpp"

namespace spindle::runtime {
namespace {

namespace fs = std::filesystem;

bool path_exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

std::string rank_dir_of(const std::string& dataset, int rank) {
  return dataset + "/rank-" + std::to_string(rank);
}

// A folder on disk is checked against the first door that answers within this
// long; when none does (rank 0 itself under mpirun, whose own door opens after
// this), it is used unchecked, with a warning.
constexpr int kCheckWaitS = 3;
constexpr const char* kRepositoryRoot = "model-repository";

std::string rec_root(const std::string& name) { return "rec-model:" + name; }

// A fetch of root's unit (by `rank`, or by `word` when set) into `base` from --fetch-from's doors.
transport::net::fetch_request request_of(const rank_files_args& f, const std::string& root,
                                         const std::string& base, int rank,
                                         const std::string& token, const std::string& word) {
  transport::net::fetch_request r;
  r.peers = f.fetch_from;
  r.token = token;
  r.root = root;
  r.rank = rank;
  r.word = word;
  r.base = base;
  return r;
}

// One folder (or, with `word`, one unit of a root served by name) fetched or checked.
status fetch_one_folder(const rank_files_args& f, const std::string& root, const std::string& base,
                        int rank, const std::string& token, bool on_disk,
                        const std::string& word = "") {
  auto r = request_of(f, root, base, rank, token, word);
  r.wait_s = on_disk ? std::min(kCheckWaitS, f.fetch_wait_s) : f.fetch_wait_s;
  auto got = transport::net::fetch_folder(r);
  if (!got && on_disk && got.error().code() == errc::unavailable) {
    log::warn(
        "{} {}: on this rank's disk, and no file door answered within {} s to check it "
        "against: used unchecked ({})",
        root, base, r.wait_s, got.error().message());
    return status::ok();
  }
  if (!got) return std::move(got).error();
  if (got->files == 0 && got->bytes == 0) {
    log::info("{} {}: on this rank's disk, equal to file door {}'s copy ({} files)", root,
              got->target, got->peer, got->kept);
    return status::ok();
  }
  log::info(
      "fetched {} {} from file door {}: {} files, {} bytes ({} bytes of partial files "
      "resumed, {} files fetched again after a checksum failed, {} reconnections)",
      root, got->target, got->peer, got->files + got->kept, got->bytes, got->resumed_from,
      got->refetched, got->reconnects);
  return status::ok();
}

bool dataset_on_disk(const std::string& dataset, int rank) {
  return path_exists(rank_dir_of(dataset, rank) + "/metadata.json") ||
         path_exists(dataset + "/metadata.json");
}

bool is_version(const std::string& s) {
  return !s.empty() && s.size() < 10 && s.front() != '0' &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// "NAME/VERSION" of each file of a repository's manifest under a numbered folder.
std::set<std::string> version_units(const transport::net::file_manifest& m) {
  std::set<std::string> out;
  for (const auto& e : m.files) {
    const auto a = e.path.find('/');
    if (a == std::string::npos) continue;
    const auto b = e.path.find('/', a + 1);
    if (b == std::string::npos) continue;
    if (is_version(e.path.substr(a + 1, b - a - 1))) out.insert(e.path.substr(0, b));
  }
  return out;
}

// The versions the first door that answers within `wait_s` holds (errc::unavailable: none did).
expected<std::set<std::string>> door_versions(const rank_files_args& f, const std::string& dir,
                                              const std::string& token, int wait_s) {
  auto r = request_of(f, kRepositoryRoot, dir, 0, token, ".");
  r.wait_s = wait_s;
  SPINDLE_ASSIGN_OR_RETURN(auto m, transport::net::fetch_manifest(r));
  return version_units(m);
}

// Every version a door holds: fetched when missing; checked when on disk unless `only_missing`.
status fetch_repository(const rank_files_args& f, const std::string& dir, const std::string& token,
                        const std::string& only_name, bool only_missing) {
  std::error_code ec;
  const bool on_disk = fs::is_directory(dir, ec) && !fs::is_empty(dir, ec);
  const int wait = on_disk ? std::min(kCheckWaitS, f.fetch_wait_s) : f.fetch_wait_s;
  auto units = door_versions(f, dir, token, wait);
  if (!units && on_disk && units.error().code() == errc::unavailable) {
    log::warn("--model-repository {}: on this rank's disk, and {}: used unchecked", dir,
              units.error().message());
    return status::ok();
  }
  if (!units) return std::move(units).error().with_context("--model-repository " + dir + ": ");
  std::size_t fetched = 0;
  for (const auto& unit : *units) {
    if (!only_name.empty() && unit.substr(0, unit.find('/')) != only_name) continue;
    const bool here = path_exists(dir + "/" + unit);
    if (here && only_missing) continue;
    SPINDLE_TRY(fetch_one_folder(f, kRepositoryRoot, dir, 0, token, here, unit)
                    .with_context(fmt::format("--model-repository {} ({}): ", dir, unit)));
    fetched += here ? 0 : 1;
  }
  log::info("--model-repository {}: {} versions at the file door, {} fetched", dir, units->size(),
            fetched);
  return status::ok();
}

// A repository asked for by version: "." (all of it) or NAME/VERSION holding a model.toml.
expected<std::string> repository_unit(const std::string& dir, const std::string& word) {
  if (word == ".") return word;
  const auto slash = word.find('/');
  if (slash == std::string::npos || word.find('/', slash + 1) != std::string::npos ||
      !is_version(word.substr(slash + 1)) || word.front() == '.')
    return make_error(errc::invalid_argument, "'{}' is not NAME/VERSION of a model repository",
                      word.substr(0, 64));
  if (!path_exists(dir + "/" + word + "/model.toml"))
    return make_error(errc::not_found, "the model repository holds no version {}", word);
  return word;
}

constexpr const char* kLoadedRoot = "loaded-model";
// A load at run time waits this long at most for a door (the loading thread
// waits with it); a door that has not loaded the model yet says this.
constexpr int kLoadedWaitS = 30;
constexpr const char* kNotLoadedThere = "loaded from a folder at this door";

}  // namespace

void loaded_folders::add(const std::string& name, const std::string& dir) {
  std::error_code ec;
  auto absolute = fs::absolute(dir, ec).lexically_normal().string();
  while (absolute.size() > 1 && absolute.back() == '/') absolute.pop_back();
  std::lock_guard lock(mu_);
  dirs_[name] = ec ? dir : absolute;
}

void loaded_folders::remove(const std::string& name) {
  std::lock_guard lock(mu_);
  dirs_.erase(name);
}

expected<std::string> loaded_folders::folder(const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = dirs_.find(name);
  if (it == dirs_.end())
    return make_error(errc::not_found, "no model '{}' {}", name.substr(0, 64), kNotLoadedThere);
  return it->second;
}

status fetch_loaded_folder(const rank_files_args& f, const std::string& name,
                           const std::string& dir, const std::string& token) {
  if (f.fetch_from.empty() || dir.empty() || path_exists(dir + "/model.toml"))
    return status::ok();
  auto r = request_of(f, kLoadedRoot, dir, 0, token, name);
  r.at_base = true;
  r.wait_s = f.fetch_wait_s;  // a transfer without progress: as at start
  // The door may not have loaded it yet (it follows the cluster's model list as
  // this rank does): asked again until it has, or until the wait is spent.
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::seconds(std::min(f.fetch_wait_s, kLoadedWaitS));
  auto got = transport::net::fetch_folder(r);
  while (!got && got.error().message().find(kNotLoadedThere) != std::string::npos &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    got = transport::net::fetch_folder(r);
  }
  if (!got)
    return std::move(got).error().with_context(
        fmt::format("model '{}' from {} (not on this rank's disk): ", name, dir));
  log::info("fetched model '{}' into {} from file door {}: {} files, {} bytes", name, got->target,
            got->peer, got->files + got->kept, got->bytes);
  return status::ok();
}

status fetch_missing(const rank_files_args& f, const rank_folders& d, int rank,
                     const std::string& token) {
  if (f.fetch_from.empty()) return status::ok();
  // Present or not, each folder is checked against the door's (a stale one is refused).
  if (!d.dataset.empty())
    SPINDLE_TRY(
        fetch_one_folder(f, "dataset", d.dataset, rank, token, dataset_on_disk(d.dataset, rank))
            .with_context(fmt::format("--dataset {}: ", d.dataset)));
  if (!d.model.empty())
    SPINDLE_TRY(
        fetch_one_folder(f, "model", d.model, rank, token, path_exists(d.model + "/model.toml"))
            .with_context(fmt::format("--model {}: ", d.model)));
  if (!d.dlrm_model.empty())
    SPINDLE_TRY(fetch_one_folder(f, "dlrm-model", d.dlrm_model, rank, token,
                                 path_exists(d.dlrm_model + "/model.toml"))
                    .with_context(fmt::format("--dlrm-model {}: ", d.dlrm_model)));
  for (const auto& [name, dir] : d.rec_models)
    SPINDLE_TRY(
        fetch_one_folder(f, rec_root(name), dir, rank, token, path_exists(dir + "/model.toml"))
            .with_context(fmt::format("--rec-model {}={}: ", name, dir)));
  if (!d.repository.empty()) SPINDLE_TRY(fetch_repository(f, d.repository, token, "", false));
  return status::ok();
}

status fetch_new_versions(const rank_files_args& f, const std::string& repository,
                          const std::string& name, const std::string& token) {
  if (f.fetch_from.empty() || repository.empty()) return status::ok();
  return fetch_repository(f, repository, token, name, true);
}

expected<std::unique_ptr<transport::net::file_door>> open_file_door(
    const rank_files_args& f, const rank_folders& d, const std::string& token,
    std::shared_ptr<const loaded_folders> loaded) {
  SPINDLE_ASSIGN_OR_RETURN(auto hp, transport::parse_host_port(f.files, "--files"));
  transport::net::file_door_options o;
  o.host = hp.host;
  o.port = int(hp.port);
  o.token = token;
  o.name = "file door";
  o.max_bytes_per_s = std::uint64_t(f.files_mbit * 1e6 / 8);
  if (!d.dataset.empty()) {
    o.roots.push_back({"dataset", d.dataset,
                       [dataset = d.dataset](int rank) -> expected<std::string> {
                         if (path_exists(dataset + "/metadata.json")) return std::string(".");
                         if (path_exists(rank_dir_of(dataset, rank) + "/metadata.json"))
                           return "rank-" + std::to_string(rank);
                         return make_error(errc::not_found,
                                           "{} holds no rank-{} partition (nor a whole dataset)",
                                           dataset, rank);
                       },
                       nullptr});
  }
  if (!d.model.empty()) o.roots.push_back({"model", d.model, nullptr, nullptr});
  if (!d.dlrm_model.empty()) o.roots.push_back({"dlrm-model", d.dlrm_model, nullptr, nullptr});
  for (const auto& [name, dir] : d.rec_models)
    o.roots.push_back({rec_root(name), dir, nullptr, nullptr});
  if (!d.repository.empty())
    o.roots.push_back(
        {kRepositoryRoot, d.repository, nullptr,
         [dir = d.repository](const std::string& word) { return repository_unit(dir, word); }});
  if (loaded) {
    transport::net::file_root r;
    r.name = kLoadedRoot;
    r.folder_named = [loaded](const std::string& name) { return loaded->folder(name); };
    o.roots.push_back(std::move(r));
  }
  SPINDLE_ASSIGN_OR_RETURN(auto door, transport::net::file_door::start(std::move(o)));
  fmt::print(
      "files {}:{} (the rank's dataset, model and door folders, to ranks holding the "
      "token)\n",
      hp.host, door->port());
  std::fflush(stdout);
  return door;
}

}  // namespace spindle::runtime
