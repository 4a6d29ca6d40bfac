// The command-line flags of the node runtime's settings: the parameter-server
// stack's and the front door's, shared by the serving commands.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "runtime/graph_updates.hpp"
#include "runtime/hps_stack.hpp"
#include "runtime/serve_rpc.hpp"
#include "runtime/type_tables.hpp"

namespace spindle::apps {

/// Adds the stack's flags; the model directory flag is named `model_flag`.
void add_hps_stack_options(CLI::App& cmd, runtime::hps_stack_args& a, const std::string& model_flag);

/// Adds --listen, --admin-token-file, --max-queue and the recommendation models' flags.
void add_front_door_options(CLI::App& cmd, runtime::front_door_args& a);

/// The recommendation models' flags alone (--rec-model, --rec-workers, the
/// --dlrm-* and parameter-server flags, the node manager's): `serve` and `node`.
void add_rec_serving_options(CLI::App& cmd, runtime::front_door_args& a);

/// --device auto|host|cuda and --device-feature-mb (serve, calibrate): where
/// PSGS's large executor runs and how many feature rows it keeps on a GPU.
void add_device_options(CLI::App& cmd, std::string& device, std::size_t& feature_mb);

/// --graph-updates, --graph-log, --graph-log-sync and --graph-stream* (serve).
void add_graph_update_options(CLI::App& cmd, runtime::graph_update_args& a);

/// --type-table-pdb and its settings (serve, node): typed GNNs' embedding tables
/// on the parameter server.
void add_type_table_options(CLI::App& cmd, runtime::type_table_args& a);
/// The --type-table-* flags given on `cmd`'s command line, by name (after parsing).
std::vector<std::string> type_table_flags_given(const CLI::App& cmd);

}  // namespace spindle::apps
