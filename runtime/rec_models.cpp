#include "runtime/rec_models.hpp"

#include <optional>

#include "actors/dlrm_inference_actor.hpp"
#include "core/log.hpp"
#include "hps/rec_runner.hpp"

namespace spindle::runtime {
namespace {

// The model, its weights' allocator and its runner, freed together when the
// last call of an unloaded model has finished.
struct rec_holder {
  nn::heap_allocator weights;
  std::optional<nn::model> model;
  std::optional<hps::memory_rec_runner> runner;
};

// One sample of zeros with key 0 in every table.
actors::dlrm_request one_sample(const config::model_desc& d) {
  actors::dlrm_request r;
  r.batch = 1;
  r.dense.assign(std::size_t(d.dense_in), 0.0f);
  for (std::size_t t = 0; t < d.table_rows.size(); ++t) r.sparse.push_back({{0}, {0, 1}});
  return r;
}

}  // namespace

expected<actors::rec_model_binding> load_rec_model(const std::string& name, const std::string& dir,
                                                   const rec_model_options& o) {
  auto h = std::make_shared<rec_holder>();
  auto loaded = nn::model::load(dir, h->weights, false, o.table_precision);
  if (!loaded)
    return o.table_precision.empty()
               ? std::move(loaded).error()
               : std::move(loaded).error().with_context(
                     fmt::format("--rec-table-precision {}: ", o.table_precision));
  nn::model m = std::move(*loaded);
  if (!m.desc().is_rec())
    return make_error(errc::invalid_argument, "{}: '{}' is a {} model, not a recommendation model",
                      dir, m.desc().name, config::to_string(m.desc().arch));
  if (!o.precision.empty())
    if (auto st = m.set_precision(o.precision); !st)
      return std::move(st).with_context(fmt::format("{}: --rec-precision: ", dir));
  const std::string served = name.empty() ? m.desc().name : name;
  if (auto note = m.slow_precision_note(served); !note.empty())
    log::warn("{}", note);  // the precision it serves with, overrides applied
  h->model.emplace(std::move(m));
  h->runner.emplace(*h->model);
  const auto warm = actors::run_dlrm_batch(*h->runner, *h->model, one_sample(h->model->desc()));
  if (!warm.error)
    return make_error(errc::invalid_argument, "{}: one sample does not run: {}", dir,
                      warm.error.to_string());
  actors::rec_model_binding b;
  b.name = served;
  b.model = &*h->model;
  b.runner = std::shared_ptr<const hps::rec_runner>(h, &*h->runner);
  b.owner = h;
  b.pool =
      std::make_shared<serving::worker_pool>(std::size_t(std::max(1, o.workers)), "rec-" + b.name);
  b.admission = o.admission;
  if (h->model->desc().slo_ms > 0 && !o.slo_from_flag)
    b.admission.slo = std::chrono::milliseconds(h->model->desc().slo_ms);
  return b;
}

expected<std::vector<std::pair<std::string, std::string>>> parse_rec_model_flags(
    const std::vector<std::string>& values) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& v : values) {
    const auto eq = v.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == v.size())
      return make_error(errc::invalid_argument, "--rec-model '{}': expected NAME=DIR", v);
    out.emplace_back(v.substr(0, eq), v.substr(eq + 1));
  }
  return out;
}

}  // namespace spindle::runtime
