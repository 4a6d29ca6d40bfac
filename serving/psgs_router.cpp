#include "serving/psgs_router.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/enum_names.hpp"

namespace spindle::serving {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

line_fit fit(const std::vector<psgs_bucket>& buckets, bool use_max) {
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& b : buckets) {
    if (b.count == 0) continue;
    double x = b.psgs_mean, y = use_max ? b.max_s : b.mean_s;
    n += 1, sx += x, sy += y, sxx += x * x, sxy += x * y;
  }
  line_fit f;
  if (n == 0) return f;
  double den = n * sxx - sx * sx;
  f.b = den > 0 ? (n * sxy - sx * sy) / den : 0;
  f.a = (sy - f.b * sx) / n;
  return f;
}

// Where small's line meets large's: below it the small executor is faster.
crossover cross(const line_fit& small, const line_fit& large) {
  const double db = small.b - large.b;
  if (db <= 0) {  // small never gets slower than large as PSGS grows
    return {small.a <= large.a ? kInf : 0.0, false};
  }
  double x = (large.a - small.a) / db;
  if (x <= 0) return {0.0, false};  // large is at least as fast everywhere
  return {x, true};
}

nlohmann::json curve_json(const executor_curve& c) {
  nlohmann::json b = nlohmann::json::array();
  for (const auto& k : c.buckets)
    b.push_back({{"psgs_lo", k.psgs_lo},
                 {"psgs_hi", k.psgs_hi},
                 {"psgs_mean", k.psgs_mean},
                 {"count", k.count},
                 {"mean_s", k.mean_s},
                 {"max_s", k.max_s}});
  return {{"executor", c.executor},
          {"buckets", b},
          {"mean_fit", {c.mean.a, c.mean.b}},
          {"max_fit", {c.max.a, c.max.b}}};
}

executor_curve curve_from(const nlohmann::json& j) {
  executor_curve c;
  c.executor = j.at("executor").get<std::string>();
  for (const auto& k : j.at("buckets"))
    c.buckets.push_back({k.at("psgs_lo"), k.at("psgs_hi"), k.at("psgs_mean"), k.at("count"),
                         k.at("mean_s"), k.at("max_s")});
  c.mean = {j.at("mean_fit")[0], j.at("mean_fit")[1]};
  c.max = {j.at("max_fit")[0], j.at("max_fit")[1]};
  return c;
}

std::string point(const crossover& c) {
  if (c.exists) return fmt::format("{:.0f}", c.psgs);
  return std::isinf(c.psgs) ? "none (small always faster)" : "0 (large always faster)";
}

}  // namespace

executor_curve build_curve(std::string executor, std::vector<std::pair<double, double>> samples,
                           int buckets) {
  executor_curve c;
  c.executor = std::move(executor);
  if (samples.empty() || buckets < 1) return c;
  double lo = kInf, hi = 0;
  for (auto [p, s] : samples) lo = std::min(lo, std::max(p, 1.0)), hi = std::max(hi, p);
  const double step = std::log(hi / lo + 1e-12) / buckets;
  c.buckets.resize(std::size_t(buckets));
  for (int i = 0; i < buckets; ++i)
    c.buckets[i].psgs_lo = lo * std::exp(step * i),
    c.buckets[i].psgs_hi = lo * std::exp(step * (i + 1));
  for (auto [p, s] : samples) {
    int i = step > 0 ? int(std::log(std::max(p, lo) / lo) / step) : 0;
    auto& b = c.buckets[std::size_t(std::clamp(i, 0, buckets - 1))];
    b.psgs_mean += p, b.mean_s += s, b.max_s = std::max(b.max_s, s), ++b.count;
  }
  std::erase_if(c.buckets, [](const psgs_bucket& b) { return b.count == 0; });
  for (auto& b : c.buckets) b.psgs_mean /= double(b.count), b.mean_s /= double(b.count);
  c.mean = fit(c.buckets, false);
  c.max = fit(c.buckets, true);
  return c;
}

void compute_crossovers(psgs_calibration& c) {
  c.cpu_preferred = cross(c.small.max, c.large.mean);
  c.gpu_preferred = cross(c.small.mean, c.large.max);
  c.latency_preferred = cross(c.small.max, c.large.max);
  c.throughput_preferred = cross(c.small.mean, c.large.mean);
}

std::string psgs_calibration::to_json() const {
  auto pt = [](const crossover& x) {
    return nlohmann::json{{"psgs", std::isinf(x.psgs) ? -1.0 : x.psgs}, {"exists", x.exists}};
  };
  nlohmann::json j = {{"format", "spindle-psgs-calibration-1"},
                      {"small", curve_json(small)},
                      {"large", curve_json(large)},
                      {"cpu_preferred", pt(cpu_preferred)},
                      {"gpu_preferred", pt(gpu_preferred)},
                      {"latency_preferred", pt(latency_preferred)},
                      {"throughput_preferred", pt(throughput_preferred)}};
  return j.dump(2);
}

expected<psgs_calibration> psgs_calibration::from_json(std::string_view text,
                                                       std::string_view origin) {
  try {
    auto j = nlohmann::json::parse(text);
    if (j.value("format", "") != "spindle-psgs-calibration-1")
      return make_error(errc::unsupported, "{}: not a Spindle PSGS calibration (format field)",
                        origin);
    psgs_calibration c;
    c.small = curve_from(j.at("small"));
    c.large = curve_from(j.at("large"));
    compute_crossovers(c);
    return c;
  } catch (const std::exception& e) {
    return make_error(errc::corrupt_data, "{}: {}", origin, e.what());
  }
}

std::string psgs_calibration::table() const {
  std::string s = fmt::format("{:>12} {:>12} | {:>10} {:>10} {:>6} | {:>10} {:>10} {:>6}\n",
                              "PSGS from", "PSGS to", small.executor + " mean", "max", "n",
                              large.executor + " mean", "max", "n");
  const std::size_t rows = std::max(small.buckets.size(), large.buckets.size());
  for (std::size_t i = 0; i < rows; ++i) {
    auto cell = [&](const executor_curve& c) {
      if (i >= c.buckets.size()) return fmt::format("{:>10} {:>10} {:>6}", "-", "-", "-");
      const auto& b = c.buckets[i];
      return fmt::format("{:>8.3f}ms {:>8.3f}ms {:>6}", b.mean_s * 1e3, b.max_s * 1e3, b.count);
    };
    const auto& ref = i < small.buckets.size() ? small.buckets[i] : large.buckets[i];
    s += fmt::format("{:>12.0f} {:>12.0f} | {} | {}\n", ref.psgs_lo, ref.psgs_hi, cell(small),
                     cell(large));
  }
  s += fmt::format("CPU-preferred (small max x large mean):        {}\n", point(cpu_preferred));
  s += fmt::format("GPU-preferred (small mean x large max):        {}\n", point(gpu_preferred));
  s += fmt::format("latency-preferred, PSGS-Strict (max x max):    {}\n", point(latency_preferred));
  s += fmt::format("throughput-preferred, PSGS-Loose (mean x mean): {}\n",
                   point(throughput_preferred));
  return s;
}

std::string psgs_calibration::summary() const {
  std::size_t n_small = 0, n_large = 0;
  for (const auto& b : small.buckets) n_small += b.count;
  for (const auto& b : large.buckets) n_large += b.count;
  return fmt::format(
      "{} batches on {} and {} on {}, summed PSGS {:.0f}..{:.0f}; routing point strict {}, "
      "loose {}",
      n_small, small.executor, n_large, large.executor,
      small.buckets.empty() ? 0.0 : small.buckets.front().psgs_lo,
      small.buckets.empty() ? 0.0 : small.buckets.back().psgs_hi, point(latency_preferred),
      point(throughput_preferred));
}

constexpr enum_names<routing_policy, 3> kRoutingPolicies{{{
    {routing_policy::strict, "strict"}, {routing_policy::loose, "loose"},
    {routing_policy::fixed, "fixed"}}}};

std::string_view to_string(routing_policy p) { return kRoutingPolicies.name(p); }

expected<routing_policy> parse_routing_policy(std::string_view text) {
  return kRoutingPolicies.parse(text, "routing policy");
}

psgs_router::psgs_router(psgs_calibration c, routing_policy p)
    : c_(std::move(c)), policy_(p), override_(std::numeric_limits<double>::quiet_NaN()) {}

void psgs_router::set_threshold_override(double psgs) {
  override_.store(psgs >= 0 ? psgs : std::numeric_limits<double>::quiet_NaN(),
                  std::memory_order_relaxed);
}

double psgs_router::threshold() const {
  const double o = threshold_override();
  if (policy() != routing_policy::fixed && !std::isnan(o)) return o;
  switch (policy()) {
    case routing_policy::strict:
      return c_.latency_preferred.psgs;
    case routing_policy::loose:
      return c_.throughput_preferred.psgs;
    case routing_policy::fixed:
      return fixed_.load() == choice::small ? kInf : 0.0;
  }
  return kInf;
}

psgs_router::choice psgs_router::route(double summed_psgs) const {
  // Quiver §4.2.2: below the chosen PSGS the small (CPU) executor, else the large one.
  return summed_psgs < threshold() ? choice::small : choice::large;
}

psgs_router::choice host_executor_while_busy(psgs_router::choice routed, std::size_t running,
                                             std::size_t slots) {
  return running >= slots ? psgs_router::choice::small : routed;
}

}  // namespace spindle::serving
