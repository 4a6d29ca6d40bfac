// A GNN pipeline's answers beyond its model's rows: a link model's pair scores
// and a call's named outputs (the model's values by op name), with the checks
// the doors and the pipeline share. Part of gnn_pipeline (same class); and the
// helpers answering a whole list of requests (tests, benches).
#include <cstring>
#include <algorithm>
#include <map>
#include <random>

#include "core/checksum.hpp"
#include "graph/metrics.hpp"
#include "nn/link_decoder.hpp"
#include "nn/relation_blocks.hpp"
#include "serving/gnn_pipeline.hpp"

namespace spindle::serving {

status check_pairs(bool pairs, std::size_t seeds, const config::model_desc& d) {
  if (!pairs) return status::ok();
  if (!d.scores_links())
    return make_error(errc::invalid_argument,
                      "model '{}' classifies nodes (task \"node\"): pairs are scored by a model "
                      "exported with task=\"link\"",
                      d.name);
  if (seeds % 2 != 0)
    return make_error(errc::invalid_argument,
                      "pairs: {} node ids do not make pairs (give u0 v0 u1 v1 ..., [k, 2])", seeds);
  return status::ok();
}

expected<std::vector<std::uint32_t>> named_output_widths(const std::vector<std::string>& outputs,
                                                         bool pairs, std::size_t seeds,
                                                         const nn::model& m) {
  std::vector<std::uint32_t> widths;
  if (outputs.empty()) return widths;
  if (pairs)
    return make_error(errc::invalid_argument,
                      "named outputs are a node's values: ask for them with seeds, not pairs");
  if (outputs.size() > kMaxNamedOutputs)
    return make_error(errc::invalid_argument, "{} named outputs (at most {} per call)",
                      outputs.size(), kMaxNamedOutputs);
  for (std::size_t i = 0; i < outputs.size(); ++i)
    for (std::size_t k = 0; k < i; ++k)
      if (outputs[k] == outputs[i])
        return make_error(errc::invalid_argument, "output '{}' is asked for twice",
                          outputs[i].substr(0, 64));
  SPINDLE_ASSIGN_OR_RETURN(auto ops, m.value_ops(outputs));
  std::uint64_t values = 0;
  for (auto i : ops) {
    widths.push_back(std::uint32_t(m.desc().ops[i].width));
    values += std::uint64_t(seeds) * widths.back();
  }
  if (values > kMaxAnswerValues)
    return make_error(errc::invalid_argument,
                      "the answer would hold {} values ({} seeds x the outputs' widths; at most "
                      "{}): ask for fewer seeds or outputs",
                      values, seeds, kMaxAnswerValues);
  return widths;
}

// A request's answer from the model's output `y`: its seeds' rows, or a link
// model's score of each pair.
status gnn_pipeline::answer_rows(const gnn_request& r, const nn::tensor& y,
                                 std::span<const std::int32_t> rows,
                                 std::vector<float>& out) const {
  if (r.pairs) {
    out.resize(rows.size() / 2);
    nn::heap_allocator scratch;  // the decoder's inputs and values (small: pairs x width)
    return nn::score_pairs(model_, scratch, y, rows, out.data());
  }
  const auto cols = std::size_t(y.cols());
  out.resize(rows.size() * cols);
  for (std::size_t s = 0; s < rows.size(); ++s)
    std::memcpy(out.data() + s * cols, y.row(rows[s]), cols * 4);
  return status::ok();
}

// A graph some of whose members ask for named values: one host pass that copies
// every asked-for op's seed rows as the op makes them (before a later in-place op
// may overwrite it); each member's answer is its values' rows, one after another,
// or the model's output rows.
status gnn_pipeline::compute_named(const prepared_batch::group& g,
                                   const std::vector<gnn_request>& batch, nn::allocator& alloc,
                                   const nn::tensor& x, batch_result& res) const {
  if (model_.desc().typed()) return compute_named_typed(g, batch, alloc, x, res);
  const auto& seeds_local = g.sub.seed_local;
  std::map<std::size_t, std::vector<float>> taken;  // op -> [group seeds x width]
  for (auto m : g.members) {
    SPINDLE_ASSIGN_OR_RETURN(auto ops, model_.value_ops(batch[m].outputs));
    for (auto i : ops) taken[i];
  }
  const nn::op_observer observe = [&](std::size_t op, const nn::tensor& v) {
    auto it = taken.find(op);
    if (it == taken.end()) return;
    const auto cols = std::size_t(v.cols());
    it->second.resize(g.seeds.size() * cols);
    for (std::size_t s = 0; s < g.seeds.size(); ++s)
      std::memcpy(it->second.data() + s * cols, v.row(seeds_local[s]), cols * 4);
  };
  SPINDLE_ASSIGN_OR_RETURN(auto y, model_.forward(alloc, g.blocks, g.degree, x, nullptr, &observe));
  std::size_t offset = 0;
  for (auto m : g.members) {
    const auto& r = batch[m];
    auto& out = res.outputs[m];
    out.clear();
    if (r.outputs.empty()) {
      const std::span<const std::int32_t> rows(seeds_local.data() + offset, r.seeds.size());
      if (auto st = answer_rows(r, y, rows, out); !st) res.errors[m] = st;
    }
    const auto ops = model_.value_ops(r.outputs);  // held: a range over *temporary dangles
    for (auto i : *ops) {
      const auto& all = taken.at(i);
      const auto cols = all.size() / g.seeds.size();
      out.insert(out.end(), all.begin() + offset * cols,
                 all.begin() + (offset + r.seeds.size()) * cols);
    }
    offset += r.seeds.size();
  }
  return status::ok();
}

// A typed model's named values, each of the group's node type: the output's and
// every asked-for op's rows, from one pass running the ops they need. The seeds,
// all of that type, are its first rows (their ranks are their local ids).
status gnn_pipeline::compute_named_typed(const prepared_batch::group& g,
                                         const std::vector<gnn_request>& batch,
                                         nn::allocator& alloc, const nn::tensor& x,
                                         batch_result& res) const {
  const auto& d = model_.desc();
  std::vector<std::string> values{d.types.outputs.at(g.output).value};
  for (auto m : g.members)
    for (const auto& name : batch[m].outputs)
      if (name != "output" && std::find(values.begin(), values.end(), name) == values.end())
        values.push_back(name);
  SPINDLE_ASSIGN_OR_RETURN(auto z, model_.forward_typed_values(alloc, g.blocks, x, values,
                                                               relation_of_type_, g.row_types,
                                                               g.row_ids));
  const auto& seeds_local = g.sub.seed_local;
  std::size_t offset = 0;
  for (auto m : g.members) {
    const auto& r = batch[m];
    auto& out = res.outputs[m];
    out.clear();
    std::vector<std::string> asked = r.outputs;
    if (asked.empty()) asked.push_back("output");
    for (const auto& name : asked) {
      const auto k = name == "output" ? 0 : std::size_t(std::find(values.begin(), values.end(),
                                                                   name) - values.begin());
      const auto& v = z[k];
      for (std::size_t s = 0; s < r.seeds.size(); ++s) {
        const auto row = std::int64_t(seeds_local[offset + s]);
        if (row >= v.rows()) return make_error(errc::internal, "{}: no row {} in '{}'", d.name, row, name);
        out.insert(out.end(), v.row(row), v.row(row) + v.cols());
      }
    }
    offset += r.seeds.size();
  }
  return status::ok();
}

// Each pair's ends are rows of the sampled graph of either type; their values'
// rows are their ranks among their types' rows.
status gnn_pipeline::compute_typed_pairs(const prepared_batch::group& g,
                                         const std::vector<gnn_request>& batch,
                                         nn::allocator& alloc, const nn::tensor& x,
                                         batch_result& res) const {
  const auto& outs = model_.desc().types.outputs;
  const std::string values[] = {outs.at(g.output).value, outs.at(g.pair_output).value};
  SPINDLE_ASSIGN_OR_RETURN(auto z, model_.forward_typed_values(alloc, g.blocks, x, values,
                                                               relation_of_type_, g.row_types,
                                                               g.row_ids));
  const auto& seeds_local = g.sub.seed_local;
  const auto rank = nn::typed_row_ranks(g.row_types, std::size_t(g.sub.hop_end.front()));
  std::size_t offset = 0;
  for (auto m : g.members) {
    const auto& r = batch[m];
    std::vector<std::int32_t> rows(r.seeds.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const auto local = std::size_t(seeds_local[offset + i]);
      rows[i] = local < rank.size() ? rank[local] : -1;
    }
    offset += rows.size();
    auto& out = res.outputs[m];
    out.resize(rows.size() / 2);
    nn::heap_allocator scratch;  // the decoder's inputs and values (small: pairs x width)
    if (auto st = nn::score_pairs(model_, scratch, z[0], z[1], rows, out.data()); !st)
      res.errors[m] = st;
  }
  return status::ok();
}

// Whole-request-list helpers of the tests and benches (declared in gnn_pipeline.hpp).
std::vector<gnn_request> degree_requests(const graph::dataset& ds, std::size_t n,
                                         bool reproducible) {
  auto p0 = graph::seed_probabilities(ds.graph(), config::parse_seed_distribution("degree"));
  std::discrete_distribution<std::int64_t> pick(p0->begin(), p0->end());
  std::mt19937_64 rng(1);
  std::vector<gnn_request> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = {{pick(rng)}, reproducible ? i + 1 : 0};
  return out;
}

answer_summary answer_all(gnn_pipeline& p, const std::vector<gnn_request>& requests,
                          std::size_t batch) {
  answer_summary out;
  std::vector<float> all;
  for (std::size_t i = 0; i < requests.size(); i += batch) {
    std::vector<gnn_request> b(requests.begin() + i,
                               requests.begin() + std::min(requests.size(), i + batch));
    auto res = p.run(b);
    for (std::size_t k = 0; k < b.size(); ++k) {
      if (!res.errors[k]) {
        if (out.failed_ids.empty()) out.first_error = res.errors[k].to_string();
        out.failed_ids.push_back(b[k].sampler_seed);
        continue;
      }
      ++out.answered;
      all.insert(all.end(), res.outputs[k].begin(), res.outputs[k].end());
    }
  }
  out.checksum = checksum(all.data(), all.size() * sizeof(float));
  return out;
}

expected<std::uint64_t> answer_checksum(gnn_pipeline& p, const std::vector<gnn_request>& requests,
                                        std::size_t batch) {
  auto sum = answer_all(p, requests, batch);
  if (!sum.failed_ids.empty())
    return make_error(errc::unavailable, "{} of {} requests failed; first: {}",
                      sum.failed_ids.size(), requests.size(), sum.first_error);
  return sum.checksum;
}

expected<std::uint64_t> answer_checksum_except(gnn_pipeline& p, std::vector<gnn_request> requests,
                                               const std::vector<std::uint64_t>& skip) {
  std::erase_if(requests, [&](const gnn_request& r) {
    return std::find(skip.begin(), skip.end(), r.sampler_seed) != skip.end();
  });
  return answer_checksum(p, requests);
}

}  // namespace spindle::serving
