// Node-wise activations, in place on their input (a copy when the input is
// still read later): ReLU, ELU, LeakyReLU, GELU (exact or tanh), tanh, sigmoid,
// PReLU (its slopes are its tensor), a constant factor, log_softmax and softmax
// over each row.
#include "nn/layers/units.hpp"

namespace spindle::nn::layers {
namespace {

template <class F>
expected<tensor> in_place(const layer_input& x, F f) {
  SPINDLE_ASSIGN_OR_RETURN(auto y, x.own_first());
  f(y);
  return y;
}

// An activation without settings.
template <void (*F)(tensor&)>
expected<tensor> plain(const layer_input& x) {
  return in_place(x, [](tensor& y) { F(y); });
}

void prelu_weights(const config::gnn_op& op, std::int64_t, weight_list& s) {
  s.add("weight", {op.channels}, "negative slope");
}

}  // namespace

const layer_kind relu{&no_weights, &plain<relu_>, &no_memory};
const layer_kind elu{&no_weights, [](const layer_input& x) {
                       return in_place(x, [&](tensor& y) { elu_(y, x.op.alpha); });
                     }, &no_memory};
const layer_kind leaky_relu{&no_weights, [](const layer_input& x) {
                              return in_place(x, [&](tensor& y) { leaky_relu_(y, x.op.negative_slope); });
                            }, &no_memory};
const layer_kind gelu{&no_weights, [](const layer_input& x) {
                        return in_place(x, [&](tensor& y) { gelu_(y, x.op.approximate_tanh); });
                      }, &no_memory};
const layer_kind tanh_layer{&no_weights, &plain<tanh_>, &no_memory};
const layer_kind sigmoid{&no_weights, &plain<sigmoid_>, &no_memory};
const layer_kind prelu{&prelu_weights, [](const layer_input& x) {
                         return in_place(x, [&](tensor& y) { prelu_(y, x.weight("weight")); });
                       }, &no_memory};
// to_hetero's mean over edge types divides their sum by the count: alpha = 1 / count.
const layer_kind scale{&no_weights, [](const layer_input& x) {
                         return in_place(x, [&](tensor& y) { scale_(y, x.op.alpha); });
                       }, &no_memory};
const layer_kind log_softmax{&no_weights, &plain<log_softmax_rows_>, &no_memory};
const layer_kind softmax{&no_weights, &plain<softmax_rows_>, &no_memory};

}  // namespace spindle::nn::layers
