// model.toml's task and decoder (config/model.hpp): what a GNN's calls ask,
// node rows or link scores, and how a pair's embeddings become its score.
#include "config/model.hpp"

namespace spindle::config {

status validate_task(const model_desc& d, std::string_view origin) {
  if (d.task != "node" && d.task != "link")
    return make_error(errc::invalid_argument, "{}: model.task = '{}': expected node or link",
                      origin, d.task.substr(0, 32));
  if (d.task == "link" && !d.is_gnn())
    return make_error(errc::invalid_argument,
                      "{}: model.task = 'link' is for GNNs; {} scores its samples itself", origin,
                      to_string(d.arch));
  if (d.decoder != "dot" && d.decoder != "ops")
    return make_error(errc::invalid_argument,
                      "{}: model.decoder = '{}': expected dot (the score z_u . z_v) or ops (the "
                      "[[decoder_op]] tables)",
                      origin, d.decoder.substr(0, 32));
  return status::ok();
}

}  // namespace spindle::config
