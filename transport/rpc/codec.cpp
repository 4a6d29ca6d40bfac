#include "transport/rpc/codec.hpp"

#include "core/enum_names.hpp"

namespace spindle::transport::rpc {

constexpr enum_names<rpc_status, 7> kStatusNames{{{
    {rpc_status::ok, "ok"}, {rpc_status::overloaded, "overloaded"},
    {rpc_status::deadline_exceeded, "deadline_exceeded"},
    {rpc_status::bad_request, "bad_request"}, {rpc_status::unavailable, "unavailable"},
    {rpc_status::internal, "internal"}, {rpc_status::unauthorized, "unauthorized"}}}};

std::string_view to_string(rpc_status s) { return kStatusNames.name(s); }

bool token_matches(std::string_view given, std::string_view expected) {
  // Constant time in the length of `expected`: no early exit on the first difference.
  unsigned diff = given.size() == expected.size() ? 0u : 1u;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const char g = i < given.size() ? given[i] : 0;
    diff |= static_cast<unsigned>(static_cast<unsigned char>(g ^ expected[i]));
  }
  return diff == 0 && !expected.empty();
}

namespace detail {

::Status to_wire(rpc_status s) { return static_cast<::Status>(static_cast<std::uint16_t>(s)); }

rpc_status from_wire(::Status s) {
  const auto v = static_cast<std::uint16_t>(s);
  return v <= static_cast<std::uint16_t>(rpc_status::unauthorized) ? static_cast<rpc_status>(v)
                                                                   : rpc_status::internal;
}

template <class T, class List>
std::vector<T> to_vector(List l) {
  std::vector<T> v;
  v.reserve(l.size());
  for (auto x : l) v.push_back(x);
  return v;
}

template <class Builder, class Vec>
void fill(Builder b, const Vec& v) {
  for (unsigned i = 0; i < v.size(); ++i) b.set(i, v[i]);
}

void write(::GnnRequest::Builder b, const gnn_call& c) {
  b.setModel(text(c.model));
  fill(b.initSeeds(c.seeds.size()), c.seeds);
  b.setSamplerSeed(c.sampler_seed);
  b.setDeadlineUs(c.deadline_us);
  b.setMinVersion(c.min_version);
  b.setPairs(c.pairs);
  if (!c.node_type.empty()) b.setNodeType(text(c.node_type));
  if (!c.outputs.empty()) {
    auto names = b.initOutputs(unsigned(c.outputs.size()));
    for (unsigned i = 0; i < c.outputs.size(); ++i) names.set(i, text(c.outputs[i]));
  }
  if (!c.seed_ids.empty()) {
    auto ids = b.initSeedIds(unsigned(c.seed_ids.size()));
    for (unsigned i = 0; i < c.seed_ids.size(); ++i) ids.set(i, text(c.seed_ids[i]));
  }
}

namespace {

// Words of a list of `n` elements of `bytes` each, or of a text, with its pointer.
std::uint64_t list_words(std::size_t n, std::size_t bytes) { return 1 + (n * bytes + 7) / 8; }
std::uint64_t text_words(const std::string& s) { return list_words(s.size() + 1, 1); }

// The RPC envelope (Call or Return, its payload and cap table) and the
// params or results struct around the request or reply.
constexpr std::uint64_t kEnvelopeWords = 24;

}  // namespace

::capnp::MessageSize size_of(const gnn_call& c) {
  std::uint64_t w = kEnvelopeWords + 8 + text_words(c.model) + list_words(c.seeds.size(), 8) +
                    text_words(c.node_type) + list_words(c.outputs.size(), 8) +
                    list_words(c.seed_ids.size(), 8);
  for (const auto& o : c.outputs) w += text_words(o);
  for (const auto& id : c.seed_ids) w += text_words(id);
  return {w, 0};
}

::capnp::MessageSize size_of(const gnn_answer& a) {
  return {kEnvelopeWords + 8 + text_words(a.message) + list_words(a.outputs.size(), 4) +
              list_words(a.widths.size(), 4),
          0};
}

::capnp::MessageSize size_of(const rec_call& c) {
  std::uint64_t w = kEnvelopeWords + 8 + text_words(c.model) + list_words(c.dense.size(), 4) +
                    list_words(c.sparse.size(), 16);
  for (const auto& b : c.sparse)
    w += list_words(b.indices.size(), 8) + list_words(b.offsets.size(), 8);
  return {w, 0};
}

::capnp::MessageSize size_of(const rec_answer& a) {
  return {kEnvelopeWords + 8 + text_words(a.message) + list_words(a.scores.size(), 4), 0};
}

gnn_call read(::GnnRequest::Reader r) {
  gnn_call c{str(r.getModel()), to_vector<std::int64_t>(r.getSeeds()), r.getSamplerSeed(),
             r.getDeadlineUs()};
  for (auto id : r.getSeedIds()) c.seed_ids.push_back(str(id));
  c.min_version = r.getMinVersion();
  c.pairs = r.getPairs();
  for (auto name : r.getOutputs()) c.outputs.push_back(str(name));
  c.node_type = str(r.getNodeType());
  return c;
}

void write(::GnnReply::Builder b, const gnn_answer& a) {
  b.setStatus(to_wire(a.status));
  b.setMessage(text(a.message));
  b.setWidth(a.width);
  fill(b.initOutputs(a.outputs.size()), a.outputs);
  b.setServerUs(a.server_us);
  b.setGraphVersion(a.graph_version);
  fill(b.initWidths(unsigned(a.widths.size())), a.widths);
}

gnn_answer read(::GnnReply::Reader r) {
  return {from_wire(r.getStatus()), str(r.getMessage()), r.getWidth(),
          to_vector<float>(r.getOutputs()), r.getServerUs(), r.getGraphVersion(),
          to_vector<std::uint32_t>(r.getWidths())};
}

namespace {

// A typed graph's changes (schema 9), per edge or node type.
void write_edges(capnp::List<::GraphUpdate::TypedEdges>::Builder out,
                 const std::vector<graph::typed_edges>& in) {
  for (unsigned i = 0; i < in.size(); ++i) {
    out[i].setEdgeType(text(in[i].type));
    fill(out[i].initSrc(in[i].src.size()), in[i].src);
    fill(out[i].initDst(in[i].dst.size()), in[i].dst);
    fill(out[i].initWeight(in[i].weight.size()), in[i].weight);
  }
}

void write_typed(::GraphUpdate::Builder b, const graph_edit& e) {
  if (!e.typed()) return;
  write_edges(b.initAddTyped(e.add_typed.size()), e.add_typed);
  write_edges(b.initRemoveTyped(e.remove_typed.size()), e.remove_typed);
  auto nodes = b.initNodeChanges(e.nodes.size());
  for (unsigned i = 0; i < e.nodes.size(); ++i) {
    const auto& n = e.nodes[i];
    nodes[i].setNodeType(text(n.type));
    nodes[i].setAdd(n.add);
    fill(nodes[i].initAddFeatures(n.add_rows.size()), n.add_rows);
    fill(nodes[i].initSetIds(n.set_ids.size()), n.set_ids);
    fill(nodes[i].initSetRows(n.set_rows.size()), n.set_rows);
    fill(nodes[i].initRemove(n.remove.size()), n.remove);
  }
}

std::vector<graph::typed_edges> read_edges(capnp::List<::GraphUpdate::TypedEdges>::Reader in) {
  std::vector<graph::typed_edges> out(in.size());
  for (unsigned i = 0; i < in.size(); ++i) {
    out[i].type = str(in[i].getEdgeType());
    out[i].src = to_vector<std::int64_t>(in[i].getSrc());
    out[i].dst = to_vector<std::int64_t>(in[i].getDst());
    out[i].weight = to_vector<float>(in[i].getWeight());
  }
  return out;
}

void read_typed(::GraphUpdate::Reader r, graph_edit& e) {
  e.add_typed = read_edges(r.getAddTyped());
  e.remove_typed = read_edges(r.getRemoveTyped());
  for (auto n : r.getNodeChanges()) {
    graph::typed_nodes t;
    t.type = str(n.getNodeType());
    t.add = n.getAdd();
    t.add_rows = to_vector<float>(n.getAddFeatures());
    t.set_ids = to_vector<std::int64_t>(n.getSetIds());
    t.set_rows = to_vector<float>(n.getSetRows());
    t.remove = to_vector<std::int64_t>(n.getRemove());
    e.nodes.push_back(std::move(t));
  }
}

}  // namespace

void write(::GraphUpdate::Builder b, const graph_edit& e) {
  fill(b.initAddSrc(e.add_src.size()), e.add_src);
  fill(b.initAddDst(e.add_dst.size()), e.add_dst);
  fill(b.initAddWeight(e.add_weight.size()), e.add_weight);
  fill(b.initRemoveSrc(e.remove_src.size()), e.remove_src);
  fill(b.initRemoveDst(e.remove_dst.size()), e.remove_dst);
  b.setAddNodes(e.add_nodes);
  fill(b.initAddNodeFeatures(e.add_node_features.size()), e.add_node_features);
  fill(b.initSetIds(e.set_ids.size()), e.set_ids);
  fill(b.initSetRows(e.set_rows.size()), e.set_rows);
  fill(b.initRemoveNodes(e.remove_nodes.size()), e.remove_nodes);
  write_typed(b, e);
}

graph_edit read(::GraphUpdate::Reader r) {
  graph_edit e;
  e.add_src = to_vector<std::int64_t>(r.getAddSrc());
  e.add_dst = to_vector<std::int64_t>(r.getAddDst());
  e.add_weight = to_vector<float>(r.getAddWeight());
  e.remove_src = to_vector<std::int64_t>(r.getRemoveSrc());
  e.remove_dst = to_vector<std::int64_t>(r.getRemoveDst());
  e.add_nodes = r.getAddNodes();
  e.add_node_features = to_vector<float>(r.getAddNodeFeatures());
  e.set_ids = to_vector<std::int64_t>(r.getSetIds());
  e.set_rows = to_vector<float>(r.getSetRows());
  e.remove_nodes = to_vector<std::int64_t>(r.getRemoveNodes());
  read_typed(r, e);
  return e;
}

void write(::RecRequest::Builder b, const rec_call& c) {
  b.setModel(text(c.model));
  b.setBatch(c.batch);
  fill(b.initDense(c.dense.size()), c.dense);
  auto bags = b.initSparse(c.sparse.size());
  for (unsigned t = 0; t < c.sparse.size(); ++t) {
    fill(bags[t].initIndices(c.sparse[t].indices.size()), c.sparse[t].indices);
    fill(bags[t].initOffsets(c.sparse[t].offsets.size()), c.sparse[t].offsets);
  }
  b.setDeadlineUs(c.deadline_us);
}

rec_call read(::RecRequest::Reader r) {
  rec_call c{
      str(r.getModel()), r.getBatch(), to_vector<float>(r.getDense()), {}, r.getDeadlineUs()};
  for (auto bag : r.getSparse()) {
    c.sparse.push_back(
        {to_vector<std::int64_t>(bag.getIndices()), to_vector<std::int64_t>(bag.getOffsets())});
  }
  return c;
}

void write(::RecReply::Builder b, const rec_answer& a) {
  b.setStatus(to_wire(a.status));
  b.setMessage(text(a.message));
  fill(b.initScores(a.scores.size()), a.scores);
  b.setServerUs(a.server_us);
}

rec_answer read(::RecReply::Reader r) {
  return {from_wire(r.getStatus()), str(r.getMessage()), to_vector<float>(r.getScores()),
          r.getServerUs()};
}

void write(::TensorReply::Builder b, const tensor_answer& a) {
  b.setStatus(to_wire(a.status));
  b.setMessage(text(a.message));
  fill(b.initResult(a.result.size()), a.result);
  b.setServerUs(a.server_us);
  b.setComputeUs(a.compute_us);
}

tensor_answer read(::TensorReply::Reader r) {
  return {from_wire(r.getStatus()), str(r.getMessage()), to_vector<float>(r.getResult()),
          r.getServerUs(), r.getComputeUs()};
}

}  // namespace detail
}  // namespace spindle::transport::rpc
