// libFuzzer target: arbitrary bytes as a request path, matched against the
// KServe door's route templates (transport/http/path_template). Any crash or
// sanitizer report is a bug; a match must capture segments of the path.
#include <cstdint>
#include <string_view>
#include <vector>

#include "transport/http/path_template.hpp"

using spindle::transport::http::path_template;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::vector<path_template> routes = [] {
    std::vector<path_template> r;
    for (const char* t : {"/v2/models/{}[/versions/{}]/ready", "/v2/models/{}[/versions/{}]",
                          "/v2/repository/models/{}/{load|unload}", "/v2/models/stats"})
      r.push_back(*path_template::parse(t));
    return r;
  }();
  const std::string_view path(reinterpret_cast<const char*>(data), size);
  for (const auto& t : routes)
    if (auto args = t.match(path))
      for (std::size_t i = 1; i < args->size(); ++i)
        if ((*args)[i].find('/') != std::string::npos) __builtin_trap();
  return 0;
}
