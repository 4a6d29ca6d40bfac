#include "client/rec_load.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <random>

namespace spindle::client {

namespace rpc = transport::rpc;

std::int64_t zipf_key(double u, std::int64_t n, double s) {
  if (n <= 1) return 0;
  double x;
  if (s <= 0) {
    x = u * double(n);
  } else if (std::abs(s - 1.0) < 1e-9) {
    x = std::exp(u * std::log(double(n) + 1)) - 1;  // density 1/(x+1) on [0, n)
  } else {
    const double e = 1.0 - s;  // density (x+1)^-s on [0, n)
    x = std::pow(u * (std::pow(double(n) + 1, e) - 1) + 1, 1.0 / e) - 1;
  }
  return std::clamp<std::int64_t>(std::int64_t(x), 0, n - 1);
}

expected<std::vector<rpc::rec_call>> rec_load_calls(const rpc::model_info& m,
                                                    const std::string& name,
                                                    const rec_load_options& o) {
  if (!o.input.empty()) {
    SPINDLE_ASSIGN_OR_RETURN(auto call, rec_call_from_json(o.input));
    call.model = name;
    return std::vector<rpc::rec_call>{std::move(call)};
  }
  if (m.table_rows.empty())
    return make_error(errc::invalid_argument,
                      "load: model '{}' does not say its tables' rows (a server older than "
                      "schema 5?): give --input FILE.json",
                      name);
  std::mt19937_64 rng(o.seed);
  std::normal_distribution<float> normal;
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<rpc::rec_call> calls(std::max<std::size_t>(1, o.distinct));
  for (auto& c : calls) {
    c.model = name;
    c.batch = o.batch;
    c.dense.resize(std::size_t(o.batch) * m.input_width);
    for (auto& x : c.dense) x = normal(rng);
    for (const auto rows : m.table_rows) {
      rpc::rec_bag bag{{}, {0}};
      for (std::uint32_t b = 0; b < o.batch; ++b) {
        for (int k = 0; k < o.lookups; ++k)
          bag.indices.push_back(zipf_key(uniform(rng), std::int64_t(rows), o.zipf));
        bag.offsets.push_back(std::int64_t(bag.indices.size()));
      }
      c.sparse.push_back(std::move(bag));
    }
  }
  return calls;
}

std::string read_all(const std::string& path) {
  if (path == "-") return {std::istreambuf_iterator<char>(std::cin), {}};
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), {}};
}

// {"dense": [[f, ...], ...], "sparse": [[[key, ...] per table] per sample]}.
expected<rpc::rec_call> rec_call_from_json(const std::string& path) {
  const std::string text = read_all(path);
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return make_error(errc::invalid_argument, "{}: not a JSON object", path);
  if (!j.contains("dense") || !j["dense"].is_array() || !j.contains("sparse") ||
      !j["sparse"].is_array() || j["dense"].size() != j["sparse"].size() || j["dense"].empty())
    return make_error(errc::invalid_argument,
                      "{}: expected {{\"dense\": [[...] per sample], \"sparse\": [[[keys] per "
                      "table] per sample]}} with as many samples in each",
                      path);
  rpc::rec_call call;
  call.batch = std::uint32_t(j["dense"].size());
  for (std::size_t b = 0; b < j["dense"].size(); ++b) {
    const auto& d = j["dense"][b];
    const auto& s = j["sparse"][b];
    if (!d.is_array() || !s.is_array())
      return make_error(errc::invalid_argument, "{}: sample {}: dense and sparse must be lists",
                        path, b);
    try {
      for (const auto& x : d) call.dense.push_back(x.get<float>());
      if (b == 0) call.sparse.resize(s.size(), rpc::rec_bag{{}, {0}});
      if (s.size() != call.sparse.size())
        return make_error(errc::invalid_argument, "{}: sample {}: {} tables, sample 0 has {}", path,
                          b, s.size(), call.sparse.size());
      for (std::size_t t = 0; t < s.size(); ++t) {
        for (const auto& k : s[t]) call.sparse[t].indices.push_back(k.get<std::int64_t>());
        call.sparse[t].offsets.push_back(std::int64_t(call.sparse[t].indices.size()));
      }
    } catch (const nlohmann::json::exception& e) {
      return make_error(errc::invalid_argument, "{}: sample {}: {}", path, b, e.what());
    }
  }
  return call;
}

}  // namespace spindle::client
