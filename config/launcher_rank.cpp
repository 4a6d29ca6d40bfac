#include "config/launcher_rank.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>

namespace spindle::config {
namespace {

// One launcher's variables: its rank and, when it says one, its world size.
struct rank_source {
  const char* rank;
  const char* size;            // nullptr: this launcher gives none
  const char* size_fallback;   // an older name of the same size, or nullptr
};

constexpr rank_source kSources[] = {
    {"SPINDLE_RANK", "SPINDLE_WORLD_SIZE", nullptr},
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", nullptr},
    {"PMIX_RANK", nullptr, nullptr},
    {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_NPROCS"},
};

// A whole number 0..1,000,000 written in decimal digits only.
std::optional<long> whole_number(std::string_view text) {
  if (text.empty() || text.size() > 7) return std::nullopt;
  long v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v <= 1'000'000 ? std::optional<long>(v) : std::nullopt;
}

expected<long> number_of(const launcher_environment& env, const std::string& name,
                         std::string_view what) {
  const std::string& value = env.vars.at(name);
  auto v = whole_number(value);
  if (!v)
    return make_error(errc::invalid_argument, "{} = '{}': not a {} (a whole number from 0)", name,
                      value, what);
  return *v;
}

// The world size a source names, 0 when it names none.
expected<std::size_t> size_of(const launcher_environment& env, const char* name,
                              const char* fallback) {
  for (const char* n : {name, fallback}) {
    if (!n || !env.vars.count(n)) continue;
    SPINDLE_ASSIGN_OR_RETURN(long v, number_of(env, n, "world size"));
    if (v == 0) return make_error(errc::invalid_argument, "{} = '0': a world has one rank at least", n);
    return std::size_t(v);
  }
  return std::size_t{0};
}

// Inside Kubernetes, a StatefulSet's pod NAME-N has hostname NAME-N.
std::optional<launcher_rank> pod_ordinal(const launcher_environment& env) {
  if (!env.vars.count("KUBERNETES_SERVICE_HOST")) return std::nullopt;
  const auto dash = env.hostname.rfind('-');
  if (dash == std::string::npos || dash == 0) return std::nullopt;
  auto v = whole_number(std::string_view(env.hostname).substr(dash + 1));
  if (!v) return std::nullopt;
  return launcher_rank{int(*v), 0,
                       fmt::format("the pod ordinal of hostname {} (a StatefulSet's pod)",
                                   env.hostname)};
}

// The rank and size agree with each other and with the TOML's ranks.
status check_world(const launcher_rank& r, std::size_t ranks, std::string_view toml,
                   std::string_view size_name) {
  if (r.size != 0 && r.size != ranks)
    return make_error(errc::invalid_argument,
                      "{} = {}, but {} has {} ranks ([[server]] entries): start one process per "
                      "rank",
                      size_name, r.size, toml, ranks);
  if (std::size_t(r.rank) >= ranks)
    return make_error(errc::invalid_argument, "rank {} from {}, but {} has ranks 0..{}", r.rank,
                      r.source, toml, ranks == 0 ? 0 : ranks - 1);
  return status::ok();
}

}  // namespace

expected<launcher_rank> rank_from_environment(const launcher_environment& env, std::size_t ranks,
                                              std::string_view toml) {
  for (const auto& s : kSources) {
    if (!env.vars.count(s.rank)) continue;
    launcher_rank r;
    SPINDLE_ASSIGN_OR_RETURN(long rank, number_of(env, s.rank, "rank"));
    r.rank = int(rank);
    r.source = s.rank;
    SPINDLE_ASSIGN_OR_RETURN(r.size, size_of(env, s.size, s.size_fallback));
    const char* size_name = s.size && env.vars.count(s.size) ? s.size : s.size_fallback;
    SPINDLE_TRY(check_world(r, ranks, toml, size_name ? size_name : ""));
    return r;
  }
  if (auto r = pod_ordinal(env)) {
    SPINDLE_ASSIGN_OR_RETURN(r->size, size_of(env, "SPINDLE_WORLD_SIZE", nullptr));
    SPINDLE_TRY(check_world(*r, ranks, toml, "SPINDLE_WORLD_SIZE"));
    return *r;
  }
  return make_error(errc::invalid_argument,
                    "no --rank, and no launcher gave one: set SPINDLE_RANK, or start the node "
                    "under mpirun (OMPI_COMM_WORLD_RANK, PMIX_RANK), srun (SLURM_PROCID) or as a "
                    "Kubernetes StatefulSet's pod (hostname NAME-N)");
}

launcher_environment read_launcher_environment() {
  launcher_environment env;
  for (const char* name :
       {"SPINDLE_RANK", "SPINDLE_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
        "PMIX_RANK", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_NPROCS", "KUBERNETES_SERVICE_HOST"})
    if (const char* v = std::getenv(name)) env.vars[name] = v;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) env.hostname = host;
  return env;
}

}  // namespace spindle::config
