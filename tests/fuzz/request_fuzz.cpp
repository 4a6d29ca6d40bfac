// libFuzzer target: arbitrary bytes as a Cap'n Proto message decoded the way the
// server decodes requests (same traversal and nesting limits), translated by
// transport/rpc's codec into plain requests, put through the checks the gateway
// runs before admitting a call (request_checks: seed ranges, dense widths and
// finiteness, bag lists, batch limits) for a graph of 1,000 nodes and a DLRM of
// 13 dense features and 8 tables, and encoded back. Any crash, sanitizer report
// or unbounded allocation is a bug; kj exceptions (rejected messages) and
// check errors are the expected answers to garbage.
#include <capnp/serialize.h>

#include <cstring>
#include <vector>

#include "transport/rpc/codec.hpp"
#include "transport/rpc/request_checks.hpp"

using namespace spindle::transport::rpc;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<capnp::word> words((size + sizeof(capnp::word) - 1) / sizeof(capnp::word));
  if (!words.empty()) std::memcpy(words.data(), data, size);
  capnp::ReaderOptions limits;
  limits.traversalLimitInWords = 1u << 20;
  limits.nestingLimit = 32;
  try {
    capnp::FlatArrayMessageReader reader(kj::arrayPtr(words.data(), words.size()), limits);
    const gnn_call g = detail::read(reader.getRoot<::GnnRequest>());
    const rec_call r = detail::read(reader.getRoot<::RecRequest>());
    (void)check_gnn_call(g, 1000);
    (void)check_rec_call(r, 13, 8);
    (void)check_gnn_batch(g.seeds.size(), r.dense.size());
    capnp::MallocMessageBuilder out;
    detail::write(out.initRoot<::GnnRequest>(), g);
    detail::write(out.initRoot<::RecRequest>(), r);
  } catch (const kj::Exception&) {
  }
  return 0;
}
