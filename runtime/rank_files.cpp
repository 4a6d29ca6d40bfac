#include "runtime/rank_files.hpp"

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

status fetch_one_folder(const rank_files_args& f, const std::string& root, const std::string& base,
                        int rank, const std::string& token) {
  transport::net::fetch_request r;
  r.peers = f.fetch_from;
  r.token = token;
  r.root = root;
  r.rank = rank;
  r.base = base;
  r.wait_s = f.fetch_wait_s;
  SPINDLE_ASSIGN_OR_RETURN(auto got, transport::net::fetch_folder(r));
  log::info(
      "fetched {} {} from file door {}: {} files, {} bytes ({} bytes of partial files "
      "resumed, {} files fetched again after a checksum failed, {} reconnections)",
      root, got.target, got.peer, got.files + got.kept, got.bytes, got.resumed_from, got.refetched,
      got.reconnects);
  return status::ok();
}

}  // namespace

bool dataset_on_disk(const std::string& dataset, int rank) {
  return path_exists(rank_dir_of(dataset, rank) + "/metadata.json") ||
         path_exists(dataset + "/metadata.json");
}

bool model_on_disk(const std::string& model) { return path_exists(model + "/model.toml"); }

status fetch_missing(const rank_files_args& f, const std::string& dataset, const std::string& model,
                     int rank, const std::string& token) {
  if (f.fetch_from.empty()) return status::ok();
  if (!dataset.empty() && !dataset_on_disk(dataset, rank))
    SPINDLE_TRY(fetch_one_folder(f, "dataset", dataset, rank, token)
                    .with_context(fmt::format("--dataset {}: ", dataset)));
  if (!model.empty() && !model_on_disk(model))
    SPINDLE_TRY(fetch_one_folder(f, "model", model, rank, token)
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
