// A small generated graph and a GraphSAGE model for actor tests: an R-MAT
// dataset of 2^scale nodes with `dim` features and a 2-layer model on it.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "../graph/test_util.hpp"
#include "graph/dataset.hpp"
#include "graph/prepare.hpp"
#include "nn/model.hpp"

namespace spindle::actors::test_support {

struct small_gnn {
  std::string dir;
  std::string model_dir = dir + "-model";
  thread_pool pool{1, "test"};
  std::optional<graph::dataset> ds;
  nn::heap_allocator weights;
  std::optional<nn::model> model;

  small_gnn(const std::string& name, int scale, int dim, int hidden, int out)
      : dir(graph::testing::temp_dir(name)) {
    graph::generate_options o;
    o.rmat.scale = scale;
    o.feature_dim = dim;
    EXPECT_TRUE(graph::generate_dataset(o, dir, pool).is_ok());
    ds.emplace(std::move(*graph::dataset::open(dir)));
    config::model_desc d;
    d.arch = config::model_arch::graphsage;
    d.in = dim, d.hidden = hidden, d.out = out;
    EXPECT_TRUE(nn::init_model(d, 2, model_dir).is_ok());
    model.emplace(std::move(*nn::model::load(model_dir, weights)));
  }
};

}  // namespace spindle::actors::test_support
