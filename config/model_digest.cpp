#include "config/model_digest.hpp"

#include "core/checksum.hpp"

namespace spindle::config {

std::string description_digest(const model_desc& d) {
  model_desc c = d;
  const model_desc defaults;
  c.name = defaults.name;
  c.fanouts.clear();
  for (auto& e : c.types.edge_types) e.fanouts.clear();
  c.sampling = defaults.sampling;
  c.precision = defaults.precision;
  c.table_precision = defaults.table_precision;
  c.ignore_tensors.clear();
  c.verified.clear();
  c.max_batch = c.batch_deadline_us = c.slo_ms = 0;
  c.version_policy.clear();
  const std::string text = to_toml(c);
  return checksum_hex(checksum(text.data(), text.size()));
}

status check_verified_digest(const model_desc& d, std::string_view origin) {
  for (const auto& [key, recorded] : d.verified) {
    if (key != kDescriptionDigestKey) continue;
    std::string_view value = recorded;  // TOML text: quoted
    if (value.size() >= 2 && (value.front() == '\'' || value.front() == '"'))
      value = value.substr(1, value.size() - 2);
    const bool hex16 = value.size() == 16 && value.find_first_not_of("0123456789abcdef") ==
                                                 std::string_view::npos;
    if (!hex16)
      return make_error(errc::invalid_argument,
                        "{}: [verified] {} = {}: malformed (16 lower-case hex digits, as the "
                        "exporter writes it); export the model again, or delete the [verified] "
                        "table to serve it unchecked",
                        origin, kDescriptionDigestKey, recorded.substr(0, 64));
    const std::string now = description_digest(d);
    if (value == now) return status::ok();
    return make_error(errc::invalid_argument,
                      "{}: what the model computes was edited after the exporter checked it "
                      "([verified] {} = \"{}\", the file describes {}): export the model again, "
                      "or delete the [verified] table to serve it unchecked",
                      origin, kDescriptionDigestKey, value, now);
  }
  return status::ok();
}

}  // namespace spindle::config
