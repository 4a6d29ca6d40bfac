#include "transport/kserve/door.hpp"

#include "transport/rpc/request_checks.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace spindle::transport::kserve {
namespace {

using rpc::rpc_status;

bool is_gnn(const rpc::model_info& m) { return m.kind == "gnn"; }

// Which outputs to send and how: those requested (each must exist), else all.
expected<std::vector<requested_output>> outputs_wanted(const infer_request& r,
                                                       const std::string& only) {
  if (r.outputs.empty()) return std::vector<requested_output>{{only, r.binary_outputs}};
  for (const auto& o : r.outputs)
    if (o.name != only)
      return make_error(errc::invalid_argument, "unknown output '{}' (the model has: {})",
                        o.name.substr(0, 64), only);
  return r.outputs;
}

expected<const tensor*> integer_input(const infer_request& r, const std::string& name,
                                      bool required) {
  const tensor* t = r.input(name);
  if (!t) {
    if (!required) return static_cast<const tensor*>(nullptr);
    return make_error(errc::invalid_argument, "missing input '{}'", name);
  }
  if (!t->is_integer() || t->datatype == "BOOL")
    return make_error(errc::invalid_argument,
                      "input '{}': datatype {}, expected INT64 (or another integer type)", name,
                      t->datatype);
  return t;
}

// Every input known and given once: a second 'seeds' would be ignored unseen.
status no_other_inputs(const infer_request& r, const std::vector<std::string>& known) {
  for (std::size_t i = 0; i < r.inputs.size(); ++i) {
    const auto& t = r.inputs[i];
    if (std::find(known.begin(), known.end(), t.name) == known.end())
      return make_error(errc::invalid_argument, "unknown input '{}' (the model takes: {})",
                        t.name.substr(0, 64), fmt::join(known, ", "));
    for (std::size_t k = 0; k < i; ++k)
      if (r.inputs[k].name == t.name)
        return make_error(errc::invalid_argument, "input '{}' is given twice", t.name);
  }
  return status::ok();
}

// A call's named outputs, cut from the answer by their widths: [n, width_k] each.
std::vector<output_tensor> named_outputs(const std::vector<requested_output>& wanted,
                                         const rpc::gnn_answer& a, std::int64_t n) {
  std::vector<output_tensor> out;
  std::size_t at = 0;
  for (std::size_t k = 0; k < wanted.size() && k < a.widths.size(); ++k) {
    const auto size = std::size_t(n) * a.widths[k];
    if (at + size > a.outputs.size()) break;  // a short answer: never read past it
    out.push_back({wanted[k].name, "FP32", {n, std::int64_t(a.widths[k])},
                   std::vector<float>(a.outputs.begin() + at, a.outputs.begin() + at + size),
                   wanted[k].binary});
    at += size;
  }
  return out;
}

std::string table_input(const char* what, std::size_t t) { return fmt::format("{}_{}", what, t); }

}  // namespace

int http_status_of(const infer_outcome& o) {
  if (o.not_found) return 404;
  switch (o.status) {
    case rpc_status::ok:
      return 200;
    case rpc_status::bad_request:
      return 400;
    case rpc_status::overloaded:  // full now: retry later or at another door
      return 429;
    case rpc_status::unavailable:
      return 503;
    case rpc_status::deadline_exceeded:
      return 504;
    case rpc_status::unauthorized:
      return 401;
    case rpc_status::internal:
      return 500;
  }
  return 500;
}

model_metadata metadata_of(const rpc::model_info& m) {
  model_metadata md;
  md.name = m.name;
  md.platform = "spindle_" + m.arch;
  md.versions = m.versions.empty() ? std::vector<std::string>{m.version} : m.versions;
  if (is_gnn(m)) {
    md.inputs = {{"seeds", "INT64", {-1}, false}, {"seed_ids", "BYTES", {-1}, true}};
    md.outputs = {{"output", "FP32", {-1, std::int64_t(m.output_width)}, false}};
    if (m.task == "link") {  // seeds get their embeddings, pairs their scores
      md.inputs[0].optional = true;
      md.inputs.push_back({"pairs", "INT64", {-1, 2}, true});
      md.inputs.push_back({"pair_ids", "BYTES", {-1, 2}, true});
      md.outputs.push_back({"scores", "FP32", {-1}, true});
      md.parameters["task"] = "link";
    }
    if (!m.node_types.empty()) {  // a typed model: calls name one (parameters.node_type)
      md.parameters["node_types"] = fmt::format("{}", fmt::join(m.node_types, ","));
      std::erase_if(md.inputs, [](const auto& i) { return i.name.ends_with("_ids"); });  // refused
    }
    if (!m.pair_types.empty())  // pairs' ends, each numbered within its node type
      md.parameters["pair_types"] = fmt::format("{}", fmt::join(m.pair_types, ","));
    return md;
  }
  md.inputs = {{"dense", "FP32", {-1, std::int64_t(m.input_width)}, false}};
  for (std::uint32_t t = 0; t < m.tables; ++t) {
    md.inputs.push_back({table_input("indices", t), "INT64", {-1}, true});
    md.inputs.push_back({table_input("offsets", t), "INT64", {-1}, true});
    md.inputs.push_back({table_input("sparse", t), "INT64", {-1, -1}, true});
  }
  md.outputs = {{"scores", "FP32", {-1}, false}};
  if (!m.table_rows.empty()) md.parameters["table_rows"] = fmt::format("{}", fmt::join(m.table_rows, ","));
  return md;
}

namespace {

// Input 'pairs' [k, 2] of a link model (rows u0 v0 u1 v1 ... in the call's seeds),
// or 'pair_ids' [k, 2] (the data's own ids, resolved by the server).
status read_pairs(const infer_request& r, rpc::gnn_call& call) {
  SPINDLE_ASSIGN_OR_RETURN(const tensor* pairs, integer_input(r, "pairs", false));
  const tensor* ids = r.input("pair_ids");
  if (!pairs && !ids) return status::ok();
  if (pairs && ids)
    return make_error(errc::invalid_argument, "give input 'pairs' or 'pair_ids', not both");
  if (r.input("seeds") || r.input("seed_ids"))
    return make_error(errc::invalid_argument, "give input 'pairs' or 'seeds', not both");
  const tensor& t = pairs ? *pairs : *ids;
  if (t.shape.size() != 2 || t.shape[1] != 2)
    return make_error(errc::invalid_argument, "input '{}': shape [{}], expected [k, 2]", t.name,
                      fmt::join(t.shape, ", "));
  if (ids && !ids->is_bytes())
    return make_error(errc::invalid_argument, "input 'pair_ids': datatype {}, expected BYTES",
                      ids->datatype);
  if (pairs) call.seeds = pairs->ints;
  if (ids) call.seed_ids = ids->strings;
  call.pairs = true;
  return status::ok();
}

}  // namespace

expected<rpc::gnn_call> gnn_call_of(const infer_request& r) {
  SPINDLE_TRY(no_other_inputs(r, {"seeds", "seed_ids", "sampler_seed", "pairs", "pair_ids"}));
  rpc::gnn_call call;
  call.model = r.model;
  SPINDLE_TRY(read_pairs(r, call));
  SPINDLE_ASSIGN_OR_RETURN(const tensor* seeds, integer_input(r, "seeds", false));
  const tensor* ids = r.input("seed_ids");
  if (!seeds && !ids && !call.pairs)
    return make_error(errc::invalid_argument, "missing input 'seeds'");
  if (seeds && ids)
    return make_error(errc::invalid_argument, "give input 'seeds' or 'seed_ids', not both");
  if (seeds && seeds->shape.size() > 2)
    return make_error(errc::invalid_argument, "input 'seeds': shape of rank {}, expected [N]",
                      seeds->shape.size());
  if (seeds) call.seeds = seeds->ints;
  if (ids) {
    if (!ids->is_bytes())
      return make_error(errc::invalid_argument, "input 'seed_ids': datatype {}, expected BYTES",
                        ids->datatype);
    call.seed_ids = ids->strings;
  }
  SPINDLE_ASSIGN_OR_RETURN(const tensor* seed, integer_input(r, "sampler_seed", false));
  if (seed) {
    if (seed->ints.size() != 1 || seed->ints[0] < 0)
      return make_error(errc::invalid_argument,
                        "input 'sampler_seed': one integer >= 0 expected, got {} elements",
                        seed->ints.size());
    call.sampler_seed = std::uint64_t(seed->ints[0]);
  }
  if (r.sampler_seed) call.sampler_seed = *r.sampler_seed;
  call.min_version = r.min_version;
  call.node_type = r.node_type;
  if (r.timeout_us) call.deadline_us = std::uint32_t(std::min<std::uint64_t>(*r.timeout_us, ~0u));
  return call;
}

namespace {

// Table t's bag: indices_T + offsets_T, or sparse_T [batch, lookups].
expected<rpc::rec_bag> bag_of(const infer_request& r, std::size_t t, std::uint32_t batch) {
  SPINDLE_ASSIGN_OR_RETURN(const tensor* fixed, integer_input(r, table_input("sparse", t), false));
  if (fixed && (r.input(table_input("indices", t)) || r.input(table_input("offsets", t))))
    return make_error(errc::invalid_argument, "table {}: give '{}', or '{}' and '{}', not both", t,
                      table_input("sparse", t), table_input("indices", t),
                      table_input("offsets", t));
  if (fixed) {
    if (fixed->shape.size() != 2 || fixed->shape[0] != batch)
      return make_error(errc::invalid_argument,
                        "input '{}': shape [{}], expected [{}, lookups] (one row per sample)",
                        fixed->name, fmt::join(fixed->shape, ", "), batch);
    rpc::rec_bag bag{fixed->ints, {}};
    for (std::uint32_t b = 0; b <= batch; ++b)
      bag.offsets.push_back(std::int64_t(b) * fixed->shape[1]);
    return bag;
  }
  SPINDLE_ASSIGN_OR_RETURN(const tensor* idx, integer_input(r, table_input("indices", t), false));
  SPINDLE_ASSIGN_OR_RETURN(const tensor* off, integer_input(r, table_input("offsets", t), false));
  if (!idx || !off)
    return make_error(
        errc::invalid_argument, "table {}: give inputs '{}' and '{}', or '{}' [batch, lookups]", t,
        table_input("indices", t), table_input("offsets", t), table_input("sparse", t));
  // torch.nn.EmbeddingBag's offsets, checked whole: bag b is indices[o[b], o[b+1]).
  rpc::rec_bag bag{idx->ints, off->ints};
  SPINDLE_TRY(rpc::check_bag(bag, batch, fmt::format("input '{}'", table_input("offsets", t))));
  return bag;
}

}  // namespace

expected<rpc::rec_call> rec_call_of(const infer_request& r, std::uint32_t dense_width,
                                    std::uint32_t tables) {
  std::vector<std::string> known = {"dense"};
  for (std::uint32_t t = 0; t < tables; ++t)
    for (const char* what : {"indices", "offsets", "sparse"}) known.push_back(table_input(what, t));
  SPINDLE_TRY(no_other_inputs(r, known));
  const tensor* dense = r.input("dense");
  if (!dense) return make_error(errc::invalid_argument, "missing input 'dense'");
  if (!dense->is_float())
    return make_error(errc::invalid_argument, "input 'dense': datatype {}, expected FP32",
                      dense->datatype);
  if (dense->shape.size() != 2 || dense->shape[1] != std::int64_t(dense_width) ||
      dense->shape[0] <= 0)
    return make_error(errc::invalid_argument, "input 'dense': shape [{}], expected [batch, {}]",
                      fmt::join(dense->shape, ", "), dense_width);
  rpc::rec_call call;
  call.model = r.model;
  call.batch = std::uint32_t(dense->shape[0]);
  call.dense = dense->floats;
  for (std::uint32_t t = 0; t < tables; ++t) {
    SPINDLE_ASSIGN_OR_RETURN(auto bag, bag_of(r, t, call.batch));
    call.sparse.push_back(std::move(bag));
  }
  if (r.timeout_us) call.deadline_us = std::uint32_t(std::min<std::uint64_t>(*r.timeout_us, ~0u));
  return call;
}

std::optional<rpc::model_info> door::find(const std::string& name, const std::string& version) {
  auto m = service_.model(name);
  if (!m || version.empty() || version == m->version) return m;
  if (std::find(m->versions.begin(), m->versions.end(), version) == m->versions.end())
    return std::nullopt;
  m->version = version;  // another served version of the name: called as NAME@VERSION
  return m;
}

bool door::model_ready(const std::string& name, const std::string& version) {
  return service_.route(name, version).has_value() && service_.model_ready(name);
}

void door::infer(infer_request r, std::function<void(infer_outcome)> done) {
  auto route = service_.route(r.model, r.version);
  if (!route) {
    infer_outcome o;
    o.not_found = true;
    o.status = rpc_status::bad_request;
    o.message = r.version.empty() ? fmt::format("unknown model '{}'", r.model.substr(0, 64))
                                  : fmt::format("unknown model '{}' version '{}'",
                                                r.model.substr(0, 64), r.version.substr(0, 16));
    return done(std::move(o));
  }
  auto fail = [&](const status& st) {
    return done({rpc_status::bad_request, false, st.message(), {}});
  };
  infer_response head{r.model, route->version, r.id, {}};
  r.model = route->call_name;
  if (route->gnn) {
    auto call = gnn_call_of(r);
    if (!call) return fail(call.error());
    if (call->pairs && !route->link)
      return fail(make_error(errc::invalid_argument,
                             "model '{}' classifies nodes: input 'pairs' is for a model exported "
                             "with task=\"link\" (give 'seeds')",
                             head.model.substr(0, 64)));
    for (std::size_t i = 0; i < r.outputs.size(); ++i)
      for (std::size_t k = 0; k < i; ++k)
        if (r.outputs[k].name == r.outputs[i].name)
          return fail(make_error(errc::invalid_argument, "output '{}' is asked for twice",
                                 r.outputs[i].name.substr(0, 64)));
    const std::string output = call->pairs ? "scores" : "output";
    const bool named = std::any_of(r.outputs.begin(), r.outputs.end(),
                                   [&](const requested_output& o) { return o.name != output; });
    auto wanted = named ? expected<std::vector<requested_output>>(r.outputs)
                        : outputs_wanted(r, output);
    if (!wanted) return fail(wanted.error());
    for (const auto& o : *wanted)
      if (named) call->outputs.push_back(o.name);  // the model's values by name
    auto n = std::int64_t(call->seeds.empty() ? call->seed_ids.size() : call->seeds.size());
    if (call->pairs) n /= 2;
    const bool pairs = call->pairs;
    service_.infer_gnn(std::move(*call), [done, head, n, pairs, named,
                                          wanted = std::move(*wanted)](rpc::gnn_answer a) {
      infer_outcome o{a.status, false, std::move(a.message), head};
      if (a.status == rpc_status::ok && named)
        o.response.outputs = named_outputs(wanted, a, n);
      else if (a.status == rpc_status::ok && pairs)
        o.response.outputs.push_back({"scores", "FP32", {n}, std::move(a.outputs), wanted[0].binary});
      else if (a.status == rpc_status::ok)
        o.response.outputs.push_back({"output", "FP32", {n, std::int64_t(a.width)},
                                      std::move(a.outputs), wanted[0].binary});
      if (a.graph_version > 0) o.response.graph_version = a.graph_version;
      done(std::move(o));
    });
    return;
  }
  auto wanted = outputs_wanted(r, "scores");
  if (!wanted) return fail(wanted.error());
  auto call = rec_call_of(r, route->input_width, route->tables);
  if (!call) return fail(call.error());
  const bool binary = (*wanted)[0].binary;
  service_.infer_rec(std::move(*call), [done, head, binary](rpc::rec_answer a) {
    infer_outcome o{a.status, false, std::move(a.message), head};
    if (a.status == rpc_status::ok) {
      const auto n = std::int64_t(a.scores.size());
      o.response.outputs.push_back({"scores", "FP32", {n}, std::move(a.scores), binary});
    }
    done(std::move(o));
  });
}

}  // namespace spindle::transport::kserve
