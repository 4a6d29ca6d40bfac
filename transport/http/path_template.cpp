#include "transport/http/path_template.hpp"

namespace spindle::transport::http {
namespace {

struct piece {
  bool capture = false, optional = false;
  int group = -1;  // optional part it belongs to
  std::string literal;
  std::vector<std::string> words;
  int index = 0;
};

std::vector<std::string> split_words(std::string_view inside) {
  std::vector<std::string> words;
  if (inside.empty()) return words;
  std::size_t at = 0;
  while (true) {
    const auto bar = inside.find('|', at);
    words.emplace_back(inside.substr(at, bar == std::string_view::npos ? inside.npos : bar - at));
    if (bar == std::string_view::npos) break;
    at = bar + 1;
  }
  return words;
}

}  // namespace

expected<path_template> path_template::parse(std::string_view text) {
  path_template t;
  t.text_ = std::string(text);
  std::vector<piece> pieces;
  int group = -1, groups = 0;
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '[' || c == ']') {
      if ((c == '[') == (group >= 0))
        return make_error(errc::invalid_argument, "path template '{}': unbalanced or nested []",
                          text);
      group = c == '[' ? groups++ : -1;
      ++i;
      continue;
    }
    piece p;
    p.group = group;
    if (c == '{') {
      const auto close = text.find('}', i);
      if (close == text.npos)
        return make_error(errc::invalid_argument, "path template '{}': '{{' without '}}'", text);
      p.capture = true;
      p.words = split_words(text.substr(i + 1, close - i - 1));
      p.index = ++t.captures_;
      i = close + 1;
    } else {
      const auto next = text.find_first_of("{[]", i);
      p.literal = std::string(text.substr(i, next == text.npos ? text.npos : next - i));
      i = next == text.npos ? text.size() : next;
    }
    pieces.push_back(std::move(p));
  }
  if (group >= 0 || groups > 4)
    return make_error(errc::invalid_argument, "path template '{}': unclosed [ or over 4 []", text);
  for (int mask = (1 << groups) - 1; mask >= 0; --mask) {  // longest variant first
    std::vector<token> v;
    for (const auto& p : pieces) {
      if (p.group >= 0 && !(mask & (1 << p.group))) continue;
      if (!p.capture && !v.empty() && !v.back().capture) {
        v.back().literal += p.literal;
        continue;
      }
      v.push_back({p.capture, p.literal, p.words, p.index});
    }
    t.variants_.push_back(std::move(v));
  }
  return t;
}

std::optional<path_args> path_template::match(std::string_view path) const {
  for (const auto& v : variants_) {
    path_args args(std::size_t(captures_ + 1));
    args[0] = std::string(path);
    std::size_t at = 0;
    bool ok = true;
    for (const auto& tok : v) {
      if (!tok.capture) {
        ok = path.substr(at, tok.literal.size()) == tok.literal;
        at += tok.literal.size();
      } else {  // one whole segment: up to the next '/' or the end
        const auto end = std::min(path.find('/', at), path.size());
        const std::string_view seg = path.substr(at, end - at);
        ok = !seg.empty();
        if (ok && !tok.words.empty()) {
          ok = false;
          for (const auto& w : tok.words) ok = ok || seg == w;
        }
        args[std::size_t(tok.index)] = std::string(seg);
        at = end;
      }
      if (!ok) break;
    }
    if (ok && at == path.size()) return args;
  }
  return std::nullopt;
}

}  // namespace spindle::transport::http
