#include "runtime/rank_files.hpp"

#include <algorithm>
#include <filesystem>

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

status fetch_one_folder(const rank_files_args& f, const std::string& root, const std::string& base,
                        int rank, const std::string& token, bool on_disk) {
  transport::net::fetch_request r;
  r.peers = f.fetch_from;
  r.token = token;
  r.root = root;
  r.rank = rank;
  r.base = base;
  r.wait_s = on_disk ? std::min(kCheckWaitS, f.fetch_wait_s) : f.fetch_wait_s;
  auto got = transport::net::fetch_folder(r);
  if (!got && on_disk && got.error().code() == errc::unavailable) {
    log::warn("{} {}: on this rank's disk, and no file door answered within {} s to check it "
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

}  // namespace

status fetch_missing(const rank_files_args& f, const std::string& dataset, const std::string& model,
                     int rank, const std::string& token) {
  if (f.fetch_from.empty()) return status::ok();
  // Present or not, each folder is checked against the door's (a stale one is refused).
  if (!dataset.empty())
    SPINDLE_TRY(fetch_one_folder(f, "dataset", dataset, rank, token, dataset_on_disk(dataset, rank))
                    .with_context(fmt::format("--dataset {}: ", dataset)));
  if (!model.empty())
    SPINDLE_TRY(fetch_one_folder(f, "model", model, rank, token,
                                 path_exists(model + "/model.toml"))
                    .with_context(fmt::format("--model {}: ", model)));
  return status::ok();
}

expected<std::unique_ptr<transport::net::file_door>> open_file_door(const rank_files_args& f,
                                                                    const std::string& dataset,
                                                                    const std::string& model,
                                                                    const std::string& token) {
  SPINDLE_ASSIGN_OR_RETURN(auto hp, transport::parse_host_port(f.files, "--files"));
  transport::net::file_door_options o;
  o.host = hp.host;
  o.port = int(hp.port);
  o.token = token;
  o.name = "file door";
  o.max_bytes_per_s = std::uint64_t(f.files_mbit * 1e6 / 8);
  if (!dataset.empty()) {
    o.roots.push_back({"dataset", dataset, [dataset](int rank) -> expected<std::string> {
                         if (path_exists(dataset + "/metadata.json")) return std::string(".");
                         if (path_exists(rank_dir_of(dataset, rank) + "/metadata.json"))
                           return "rank-" + std::to_string(rank);
                         return make_error(errc::not_found,
                                           "{} holds no rank-{} partition (nor a whole dataset)",
                                           dataset, rank);
                       }});
  }
  if (!model.empty()) o.roots.push_back({"model", model, nullptr});
  SPINDLE_ASSIGN_OR_RETURN(auto door, transport::net::file_door::start(std::move(o)));
  fmt::print("files {}:{} (the rank's dataset and model folders, to ranks holding the token)\n",
             hp.host, door->port());
  std::fflush(stdout);
  return door;
}

}  // namespace spindle::runtime
