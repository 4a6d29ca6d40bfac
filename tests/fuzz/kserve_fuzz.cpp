// libFuzzer target: arbitrary bytes as the body of a KServe v2 HTTP infer
// request (JSON, or JSON + binary tensors when the first byte says so, with
// the next two as Inference-Header-Content-Length), parsed the way the HTTP
// door parses it and mapped to a GNN call and a recommendation call (a model
// of 13 dense features and 3 tables). Any crash, sanitizer report or unbounded
// allocation is a bug; error statuses are the expected answers to garbage.
#include <cstdint>
#include <optional>
#include <string_view>

#include "transport/kserve/door.hpp"
#include "transport/kserve/infer_json.hpp"

using namespace spindle::transport;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  std::optional<std::size_t> head;
  if (data[0] & 1) head = std::size_t(data[1]) | (std::size_t(data[2]) << 8);
  const std::string_view body(reinterpret_cast<const char*>(data + 3), size - 3);
  auto r = kserve::parse_infer_request(body, head);
  if (!r) return 0;
  r->model = "m";
  (void)kserve::gnn_call_of(*r);
  (void)kserve::rec_call_of(*r, 13, 3);  // 13 dense features, 3 tables
  kserve::infer_response out{"m", "1", r->id, {{"output", "FP32", {1, 2}, {1.0f, 2.0f}, true}}};
  std::optional<std::size_t> out_head;
  (void)kserve::render_infer_response(out, out_head);
  return 0;
}
