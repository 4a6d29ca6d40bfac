// op kind -> its unit. A kind config/model_ops.hpp knows but nothing here
// serves is caught by the test that walks every kind.
#include "nn/layers/units.hpp"

namespace spindle::nn {
namespace {

// An op kind outside the enumeration (a corrupt value): refused, never computed.
const layer_kind unknown{&layers::no_weights, [](const layer_input& x) -> expected<tensor> {
                           return make_error(errc::internal, "op kind {} has no layer",
                                             int(x.op.kind));
                         }, &layers::no_memory};

}  // namespace

const layer_kind& layer_of(config::op_kind kind) {
  using config::op_kind;
  switch (kind) {
    case op_kind::sage: return layers::sage;
    case op_kind::gcn: return layers::gcn;
    case op_kind::gat: return layers::gat;
    case op_kind::gin: return layers::gin;
    case op_kind::linear: return layers::linear_layer;
    case op_kind::batch_norm: return layers::batch_norm;
    case op_kind::layer_norm: return layers::layer_norm;
    case op_kind::relu: return layers::relu;
    case op_kind::elu: return layers::elu;
    case op_kind::leaky_relu: return layers::leaky_relu;
    case op_kind::gelu: return layers::gelu;
    case op_kind::tanh: return layers::tanh_layer;
    case op_kind::sigmoid: return layers::sigmoid;
    case op_kind::prelu: return layers::prelu;
    case op_kind::add: return layers::add;
    case op_kind::cat: return layers::cat;
    case op_kind::max: return layers::max;
    case op_kind::mul: return layers::mul;
    case op_kind::gatv2: return layers::gatv2;
    case op_kind::transformer: return layers::transformer;
    case op_kind::res_gated: return layers::res_gated;
    case op_kind::gcn_propagate: return layers::gcn_propagate;
    case op_kind::log_softmax: return layers::log_softmax;
    case op_kind::softmax: return layers::softmax;
    case op_kind::scale: return layers::scale;
    case op_kind::mean: return layers::mean;
    case op_kind::gine: return layers::gine;
  }
  return unknown;
}

}  // namespace spindle::nn
