#include "transport/http/http_wire.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cstdlib>

namespace spindle::transport::http {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

namespace {

const char* reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 411:
      return "Length Required";
    case 413:
      return "Payload Too Large";
    case 414:
      return "URI Too Long";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "Status";
  }
}

// Every CR is followed by LF and every LF preceded by CR.
bool crlf_only(std::string_view head) {
  for (std::size_t i = 0; i < head.size(); ++i) {
    if (head[i] == '\r' && (i + 1 >= head.size() || head[i + 1] != '\n')) return false;
    if (head[i] == '\n' && (i == 0 || head[i - 1] != '\r')) return false;
  }
  return true;
}

}  // namespace

std::optional<head_refusal> parse_request_head(std::string_view head, const head_limits& limits,
                                               httplib::Request& req, std::size_t& content_length) {
  const auto line_end = head.find("\r\n");
  const std::string_view line = head.substr(0, line_end);
  const auto sp1 = line.find(' '), sp2 = line.rfind(' ');
  if (sp1 == std::string::npos || sp2 <= sp1 || !line.substr(sp2 + 1).starts_with("HTTP/1."))
    return head_refusal{400, "malformed request line"};
  // RFC 9112: CRLF line ends only, no obsolete line folding, a target without
  // spaces, HTTP/1.0 or 1.1; anything else a proxy might read otherwise.
  const std::string_view version = line.substr(sp2 + 1);
  if ((version != "HTTP/1.1" && version != "HTTP/1.0") ||
      line.substr(sp1 + 1, sp2 - sp1 - 1).find(' ') != std::string_view::npos || !crlf_only(head))
    return head_refusal{400, "malformed request (line ends, folding, target or version)"};
  req.method = std::string(line.substr(0, sp1));
  req.version = std::string(line.substr(sp2 + 1));
  if (sp2 - sp1 - 1 > limits.max_path_bytes)
    return head_refusal{414, fmt::format("request target past {} bytes", limits.max_path_bytes)};
  const std::string target(line.substr(sp1 + 1, sp2 - sp1 - 1));
  const auto q = target.find('?');
  req.path = target.substr(0, q);
  req.target = target;
  if (q != std::string::npos) httplib::detail::parse_query_text(target.substr(q + 1), req.params);
  std::size_t at = line_end == std::string::npos ? head.size() : line_end + 2;
  while (at < head.size()) {
    auto e = head.find("\r\n", at);
    if (e == std::string::npos) e = head.size();
    const auto h = head.substr(at, e - at);
    const auto colon = h.find(':');
    // RFC 9112 §5.1: no whitespace between the field name and the colon, and no
    // line folded onto the previous one (obs-fold, a line starting with space).
    if (colon == std::string::npos || colon == 0 || h[colon - 1] == ' ' || h[colon - 1] == '\t' ||
        h.front() == ' ' || h.front() == '\t')
      return head_refusal{400, "malformed header line"};
    auto v = h.substr(colon + 1);
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
    req.headers.emplace(std::string(h.substr(0, colon)), std::string(v));
    at = e + 2;
  }
  // RFC 9112 §6: no Transfer-Encoding at all (a body is framed by Content-Length
  // only), and one Content-Length of digits: anything else could be read
  // differently by a proxy in front (request smuggling).
  if (req.has_header("Transfer-Encoding"))
    return head_refusal{411,
                        "Transfer-Encoding is not accepted: send the body with Content-Length"};
  content_length = 0;
  if (req.has_header("Content-Length")) {
    const auto text = req.get_header_value("Content-Length");
    const auto [first, last] = req.headers.equal_range("Content-Length");
    for (auto it = first; it != last; ++it)
      if (it->second != text) return head_refusal{400, "conflicting Content-Length headers"};
    char* end = nullptr;
    const bool digits = !text.empty() && text.size() <= 19 &&
                        text.find_first_not_of("0123456789") == std::string::npos;
    const unsigned long long n = digits ? std::strtoull(text.c_str(), &end, 10) : 0;
    if (!digits)
      return head_refusal{
          400, fmt::format("Content-Length: '{}' is not a byte count", text.substr(0, 32))};
    if (n > limits.max_body_bytes)
      return head_refusal{413, "request body is larger than the limit"};
    content_length = std::size_t(n);
  }
  return std::nullopt;
}

std::string serialize_response(const httplib::Response& res, bool keep_alive) {
  const int status = res.status > 0 ? res.status : 200;
  std::string out = fmt::format("HTTP/1.1 {} {}\r\n", status, reason(status));
  for (const auto& [k, v] : res.headers)
    if (!iequals(k, "Content-Length") && !iequals(k, "Connection")) out += k + ": " + v + "\r\n";
  out += fmt::format("Content-Length: {}\r\nConnection: {}\r\n\r\n", res.body.size(),
                     keep_alive ? "keep-alive" : "close");
  return out + res.body;
}

}  // namespace spindle::transport::http
