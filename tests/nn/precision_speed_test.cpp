// The reduced precisions' speed against float32 on this CPU: measured for real
// (both figures positive) where the CPU runs them, refused by name where it
// does not or for a precision that is not reduced; the note a model's load
// logs names both figures when one is slower, and says nothing otherwise.
#include "nn/precision_speed.hpp"

#include <gtest/gtest.h>

#include "nn/bf16_gemm.hpp"
#include "nn/int8_gemm.hpp"
#include "nn/model.hpp"

namespace spindle::nn {
namespace {

TEST(precision_speed_test, each_reduced_precision_is_timed_beside_float32_or_refused_by_name) {
  for (const std::string p : {"bf16", "int8"}) {
    const auto why = p == "bf16" ? bf16_unsupported_reason() : int8_unsupported_reason();
    auto s = measure_precision_speed(p, 16, 64, 48, 0.003);
    if (!why.empty()) {
      ASSERT_FALSE(s.has_value());
      EXPECT_NE(s.error().message().find(p), std::string::npos) << s.error().message();
      continue;
    }
    ASSERT_TRUE(s.has_value()) << s.error().message();
    EXPECT_EQ(s->precision, p);
    EXPECT_GT(s->fp32_gflops, 0.0);
    EXPECT_GT(s->reduced_gflops, 0.0);
    EXPECT_EQ(s->rows * s->in * s->out, 16 * 64 * 48);
    auto again = precision_speed_here(p, 16, 64, 48);
    ASSERT_TRUE(again.has_value());
    EXPECT_EQ(precision_speed_here(p, 16, 64, 48)->fp32_gflops, again->fp32_gflops)
        << "measured once per shape";
  }
  for (const std::string p : {"fp32", "fp16", ""}) {
    auto s = measure_precision_speed(p, 16, 64, 48);
    ASSERT_FALSE(s.has_value()) << p;
    EXPECT_NE(s.error().message().find("not a reduced precision"), std::string::npos);
  }
  EXPECT_FALSE(measure_precision_speed("bf16", 0, 64, 48).has_value());
}

TEST(precision_speed_test, a_slower_precision_is_named_with_both_figures_and_a_faster_one_not) {
  precision_speed slow{"bf16", 64, 1024, 1024, 160.0, 92.0};
  const auto note = slow_precision_note("ctr16", slow);
  EXPECT_NE(note.find("model 'ctr16'"), std::string::npos) << note;
  EXPECT_NE(note.find("0.57x"), std::string::npos) << note;
  EXPECT_NE(note.find("92 against 160 GFLOP/s"), std::string::npos) << note;
  EXPECT_NE(note.find("precision = \"fp32\""), std::string::npos) << note;
  EXPECT_EQ(slow_precision_note("ctr16", {"bf16", 64, 1024, 1024, 160.0, 300.0}), "");
  EXPECT_EQ(slow_precision_note("ctr16", {"int8", 64, 1024, 1024, 160.0, 150.0}), "")
      << "within 0.9x is not called slower";
}

// A model's note is for the precision it computes with now, under the name it
// is served by: none in fp32; in bf16 / int8 either none or one naming both.
TEST(precision_speed_test, a_models_note_is_for_its_precision_now_under_its_served_name) {
  heap_allocator alloc;
  auto m = model::load(SPINDLE_SOURCE_DIR "/tests/nn/golden/dlrm", alloc);
  ASSERT_TRUE(m.has_value()) << m.error().to_string();
  EXPECT_EQ(m->slow_precision_note("ctr"), "") << "fp32 has nothing to compare";
  for (const std::string p : {"bf16", "int8"}) {
    if (!m->set_precision(p)) continue;  // refused on this CPU (bf16_test checks the refusal)
    const auto note = m->slow_precision_note("ctr");
    if (note.empty()) continue;  // as fast as float32 here, or faster
    EXPECT_NE(note.find("model 'ctr': precision " + p), std::string::npos) << note;
    EXPECT_NE(note.find("GFLOP/s"), std::string::npos) << note;
  }
}

}  // namespace
}  // namespace spindle::nn
