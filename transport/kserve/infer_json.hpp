// KServe v2 over HTTP/REST: the JSON body of an infer request and response,
// with Triton's binary-tensor extension (JSON header of
// Inference-Header-Content-Length bytes, then each binary tensor's bytes in
// order). Pure functions; errors name the field and value a client got wrong.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "transport/kserve/tensor.hpp"

namespace spindle::transport::kserve {

/// The HTTP header giving the JSON part's length in a binary-tensor body.
inline constexpr const char* kHeaderLength = "Inference-Header-Content-Length";

/// Parses `body`; `header_length` is the Inference-Header-Content-Length header
/// (absent: the whole body is JSON). `model`/`version` come from the URL.
expected<infer_request> parse_infer_request(std::string_view body,
                                            std::optional<std::size_t> header_length);

/// The response body; `header_length` is set to the JSON part's length when
/// some output is binary (the caller sends Inference-Header-Content-Length),
/// else to nullopt.
std::string render_infer_response(const infer_response& r,
                                  std::optional<std::size_t>& header_length);

/// KServe's error body: {"error": "<message>"}.
std::string error_body(std::string_view message);

}  // namespace spindle::transport::kserve
