// libFuzzer target: arbitrary bytes as the TOML a user hands Spindle (cluster /
// topology file, model.toml, --hps-config), through the real parsers and
// validators. Any crash, sanitizer report or unbounded allocation is a bug; a
// clean error naming the field is the expected answer to garbage.
#include <cstdint>
#include <string_view>

#include "config/hps.hpp"
#include "config/model.hpp"
#include "config/topology.hpp"

using namespace spindle::config;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)parse_topology(text, "fuzz.toml");
  (void)parse_model_desc(text, "model.toml");
  (void)parse_hps_config(text, "hps.toml", hps_config{});
  return 0;
}
