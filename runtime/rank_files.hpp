// What a rank needs on its own disk, and how it gets it when it is not there:
// `spindle node --fetch-from` fetches its partition (DIR/rank-N of `spindle
// partition`'s output, or a whole dataset), its model folder and its door's
// folders (--dlrm-model, each --rec-model, the --model-repository's versions)
// from file doors before it opens them; `--files` opens this node's own file
// door, serving the folders it was started with and those of models loaded
// through it. Called at start, on the node's thread; a repository's new
// versions and a loaded model's folder also as they are loaded.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/status.hpp"
#include "transport/net/file_door.hpp"

namespace spindle::runtime {

struct rank_files_args {
  std::string files;                    // --files HOST:PORT: this node's file door ("": none)
  std::vector<std::string> fetch_from;  // --fetch-from HOST:PORT,...: doors to fetch from
  int fetch_wait_s = 120;               // --fetch-wait-s: retry without progress this long
  double files_mbit = 0;                // --files-rate: the door's cap in Mbit/s (0: none)
};

/// The folders a rank opens, each fetched when missing and served by its door
/// ("" or none: not given).
struct rank_folders {
  std::string dataset, model;
  std::string dlrm_model;                                       // --dlrm-model
  std::vector<std::pair<std::string, std::string>> rec_models;  // --rec-model NAME=DIR
  std::string repository;                                       // --model-repository
};

/// Fetches every folder of `d` (rank `rank`'s share of the dataset) from
/// --fetch-from's doors when it is not on this rank's disk, and checks it
/// against the door's copy when it is (a stale or other folder is refused by
/// name; when no door answers within 3 s it is used unchecked, with a warning);
/// nothing without a door. A repository is fetched version by version: those
/// this disk lacks are fetched, those it holds checked. Errors name the
/// folder, the file and the door.
status fetch_missing(const rank_files_args& f, const rank_folders& d, int rank,
                     const std::string& token);

/// The versions of repository model `name` the first answering door holds and
/// `repository` lacks, fetched (new versions loaded at run time); those on this
/// disk are not checked again. Errors name the version and the door.
status fetch_new_versions(const rank_files_args& f, const std::string& repository,
                          const std::string& name, const std::string& token);

/// The folders of the models loaded at this node's door at run time (`load
/// NAME DIR`), by name: its file door serves them, so a rank that follows the
/// load and lacks DIR fetches it (nothing shared but the network). Thread-safe.
class loaded_folders {
 public:
  /// `dir` as loaded; kept as its absolute path.
  void add(const std::string& name, const std::string& dir);
  void remove(const std::string& name);
  /// The folder `name` was loaded from, or not_found naming it.
  expected<std::string> folder(const std::string& name) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::string> dirs_;
};

/// Model `name` loaded at another door from `dir`: fetched from --fetch-from's
/// doors when `dir` holds no model.toml on this rank's disk (a folder there is
/// used as it is). Errors name the model, the folder and the door.
status fetch_loaded_folder(const rank_files_args& f, const std::string& name,
                           const std::string& dir, const std::string& token);

/// Opens the file door --files asks for, serving the folders of `d` (rank N
/// asks for DIR/rank-N of a partition output, or the whole dataset; a
/// repository is asked for by NAME/VERSION) and those of `loaded` (by model
/// name; null: none).
expected<std::unique_ptr<transport::net::file_door>> open_file_door(
    const rank_files_args& f, const rank_folders& d, const std::string& token,
    std::shared_ptr<const loaded_folders> loaded = nullptr);

}  // namespace spindle::runtime
