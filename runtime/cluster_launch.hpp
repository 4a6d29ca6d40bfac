// What `spindle launch` runs: Hera's plan servers, then every rank of a cluster
// TOML as a `spindle node` (here, through the TOML's launcher, or a printed
// command), supervised until a stop signal. Runs on the calling thread.
#pragma once

#include <string>
#include <vector>

#include "core/status.hpp"

namespace spindle::runtime {

struct launch_args {
  std::string config, dataset, model, listen, admin_token_file;
  std::string token_file;                    // --token-file: the cluster token to hand the ranks
  std::string metrics, calibration, policy;  // rank 0's, as `node` takes them
  std::string calibration_out;               // rank 0's, with --calibrate
  std::string http, grpc;                    // rank 0's KServe v2 doors
  double replan_drift = 0;                   // passed to rank 0 as --replan-drift when > 0
  bool restart = false;              // restart a rank that exits (backoff 1 s doubling to 30 s)
  std::vector<std::string> serving;  // --pipelines, --max-batch, ...: passed to every rank
  std::vector<std::string> rec;      // recommendation models' flags: passed to every door
  std::string pdb;                   // --pdb DIR: rank N's DLRM tables in DIR/rank-N
  std::string type_table_pdb;  // --type-table-pdb DIR: rank N's typed tables in DIR/rank-N
  std::string files;  // --files HOST:PORT: rank 0's file door; the others --fetch-from it
};

/// Starts the ranks of `a.config` and supervises them until a stop signal or
/// until every rank is down. Errors name the flag or the file.
status run_launch(const launch_args& a);

}  // namespace spindle::runtime
