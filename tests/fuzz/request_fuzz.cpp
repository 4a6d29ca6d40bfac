// libFuzzer target: arbitrary bytes as a Cap'n Proto message decoded the way the
// server decodes requests (same traversal and nesting limits), then translated
// by transport/rpc's codec into plain requests and back. Any crash, sanitizer
// report or unbounded allocation is a bug; kj exceptions (rejected messages)
// are the expected answer to garbage.
#include <capnp/serialize.h>

#include <cstring>
#include <vector>

#include "transport/rpc/codec.hpp"

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
    capnp::MallocMessageBuilder out;
    detail::write(out.initRoot<::GnnRequest>(), g);
    detail::write(out.initRoot<::RecRequest>(), r);
  } catch (const kj::Exception&) {
  }
  return 0;
}
