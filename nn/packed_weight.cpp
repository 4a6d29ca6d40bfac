#include "nn/packed_weight.hpp"

#include <omp.h>

#include <algorithm>
#include <dnnl.hpp>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "core/log.hpp"
#include "nn/detail/onednn_blocks.hpp"
#include "nn/f32_matmul.hpp"

namespace spindle::nn {
// The same blocks and padding as the plain-layout route (nn/detail/onednn_blocks).
static_assert(packed_weight::kBlockRows == detail::kBlockRows &&
              packed_weight::kRowStep == detail::kRowStep);

namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

// One engine for the packed weights and the primitives that read them; never
// destroyed, so worker threads' primitives and streams outlive it at exit.
dnnl::engine& cpu_engine() {
  static auto* e = new dnnl::engine{dnnl::engine::kind::cpu, 0};
  return *e;
}

dt type_of(packed_weight::element e) {
  return e == packed_weight::element::bf16 ? dt::bf16 : dt::f32;
}
std::size_t bytes_of(packed_weight::element e) {
  return e == packed_weight::element::bf16 ? sizeof(std::uint16_t) : sizeof(float);
}

// A product of `m` rows (kBlockRows, or a short last block padded to kRowStep) of
// inputs in `x` (the weights' type), summed into float32.
dnnl::matmul::primitive_desc block_desc(std::int64_t m, std::int64_t in, std::int64_t out, dt x,
                                        const dnnl::memory::desc& weights) {
  return dnnl::matmul::primitive_desc(
      dnnl::matmul::desc(dnnl::memory::desc({m, in}, x, tag::ab), weights,
                         dnnl::memory::desc({m, out}, dt::f32, tag::ab)),
      cpu_engine());
}

void warn_once(const dnnl::error& e) {
  static std::once_flag said;
  std::call_once(said, [&] {
    log::warn("oneDNN's packed-weight matmul failed ({}); such products take the plain route",
              e.what());
  });
}

}  // namespace

struct packed_weight::held {
  dnnl::memory::desc md;
  dnnl::memory memory;
};

packed_weight::packed_weight(std::unique_ptr<held> h, element type, std::int64_t out,
                             std::int64_t in)
    : h_(std::move(h)), type_(type), out_(out), in_(in) {}

packed_weight::~packed_weight() = default;

std::size_t packed_weight::bytes() const { return h_->md.get_size(); }

namespace {

// W [out x in] of `type` at `w`, reordered into the layout oneDNN picks for a
// block's product (W^T viewed as [in x out], tag ba); null where it refuses.
std::unique_ptr<packed_weight::held> reorder_weight(const void* w, packed_weight::element type,
                                                    std::int64_t out, std::int64_t in) {
  const dt t = type_of(type);
  try {
    omp_set_num_threads(1);
    const auto pd = block_desc(packed_weight::kBlockRows, in, out, t,
                               dnnl::memory::desc({in, out}, t, tag::any));
    auto h = std::make_unique<packed_weight::held>();
    h->md = pd.weights_desc();
    h->memory = dnnl::memory(h->md, cpu_engine());
    dnnl::memory plain({{in, out}, t, tag::ba}, cpu_engine(), const_cast<void*>(w));
    dnnl::stream s(cpu_engine());
    dnnl::reorder(plain, h->memory).execute(s, plain, h->memory);
    s.wait();
    return h;
  } catch (const dnnl::error& e) {
    warn_once(e);
    return nullptr;
  }
}

}  // namespace

std::shared_ptr<const packed_weight> packed_weight::pack_as(const void* w, std::size_t values,
                                                            element type, std::int64_t out,
                                                            std::int64_t in) {
  if (!onednn_runs_avx512() || out <= 0 || in <= 0 || std::int64_t(values) != out * in)
    return nullptr;
  auto h = reorder_weight(w, type, out, in);
  if (!h) return nullptr;
  return std::shared_ptr<const packed_weight>(new packed_weight(std::move(h), type, out, in));
}

std::shared_ptr<const packed_weight> packed_weight::pack(std::span<const float> w,
                                                         std::int64_t out, std::int64_t in) {
  return pack_as(w.data(), w.size(), element::f32, out, in);
}

std::shared_ptr<const packed_weight> packed_weight::pack(std::span<const std::uint16_t> w,
                                                         std::int64_t out, std::int64_t in) {
  return pack_as(w.data(), w.size(), element::bf16, out, in);
}

namespace {

// A thread's stream and primitives by (rows, in, out, type), each for the
// weights layout it was made for (failed: oneDNN would not make one reading that
// layout; not tried again), and the zero-padded rows of a short last block.
struct block_primitive {
  dnnl::memory::desc md;
  std::optional<dnnl::matmul> mm;
};
// Shapes a thread keeps primitives for (up to 8 block sizes each): models reloaded
// with new layer widths would otherwise grow the cache for the thread's life.
constexpr std::size_t kMaxPrimitives = 256;

struct thread_primitives {
  dnnl::stream stream{cpu_engine()};
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, dt>, std::vector<block_primitive>>
      made;
  std::vector<unsigned char> padded_x;
  std::vector<float> padded_y;
};

// The primitive for `m` rows that reads weights laid out as `md`; null where
// oneDNN's layout for m rows differs (a short block then takes the plain route).
const dnnl::matmul* primitive_for(thread_primitives& mine, std::int64_t m, std::int64_t in,
                                  std::int64_t out, dt x, const dnnl::memory::desc& md) {
  auto& list = mine.made[{m, in, out, x}];
  auto it = std::find_if(list.begin(), list.end(),
                         [&](const block_primitive& c) { return c.md == md; });
  if (it == list.end()) {
    list.push_back({md, std::nullopt});
    it = std::prev(list.end());
    try {
      auto pd = block_desc(m, in, out, x, dnnl::memory::desc({in, out}, x, tag::any));
      if (pd.weights_desc() == md) it->mm.emplace(pd);
    } catch (const dnnl::error& e) {
      warn_once(e);
    }
  }
  return it->mm ? &*it->mm : nullptr;
}

void run_block(thread_primitives& mine, const dnnl::matmul& mm, const dnnl::memory& weights,
               const void* x, dt xt, float* y, std::int64_t m, std::int64_t in, std::int64_t out) {
  dnnl::memory src({{m, in}, xt, tag::ab}, cpu_engine(), const_cast<void*>(x));
  dnnl::memory dst({{m, out}, dt::f32, tag::ab}, cpu_engine(), y);
  mm.execute(mine.stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}});
  mine.stream.wait();
}

}  // namespace

std::int64_t packed_weight::multiply_blocks(const float* x, float* y, std::int64_t rows) const {
  return type_ == element::f32 ? multiply(x, y, rows) : 0;
}

std::int64_t packed_weight::multiply_blocks(const std::uint16_t* x, float* y,
                                            std::int64_t rows) const {
  return type_ == element::bf16 ? multiply(x, y, rows) : 0;
}

std::int64_t packed_weight::multiply(const void* xv, float* y, std::int64_t rows) const {
  thread_local std::unique_ptr<thread_primitives> mine;  // made inside the try below
  const auto* x = static_cast<const unsigned char*>(xv);
  const dt xt = type_of(type_);
  const std::size_t row_bytes = bytes_of(type_) * std::size_t(in_);
  std::int64_t done = 0;
  try {
    omp_set_num_threads(1);  // this thread only: a pool already split the rows
    if (!mine) mine = std::make_unique<thread_primitives>();
    if (mine->made.size() >= kMaxPrimitives) mine->made.clear();  // many shapes: start over
    if (rows >= kBlockRows) {
      const auto* mm = primitive_for(*mine, kBlockRows, in_, out_, xt, h_->md);
      if (!mm) return 0;  // the plain route takes every row
      for (; done + kBlockRows <= rows; done += kBlockRows)
        run_block(*mine, *mm, h_->memory, x + std::size_t(done) * row_bytes, xt, y + done * out_,
                  kBlockRows, in_, out_);
    }
    const std::int64_t left = rows - done;
    // A float32 block of a few rows is a GEMV's work (nn/ops); bfloat16 has no such
    // route, and its plain one repacks the weight, so any short block comes here.
    if (left == 0 || (type_ == element::f32 && left < kMinShortRows)) return done;
    const std::int64_t m = detail::padded_rows(left);
    const auto* mm = primitive_for(*mine, m, in_, out_, xt, h_->md);
    if (!mm) return done;
    if (m == left) {
      run_block(*mine, *mm, h_->memory, x + std::size_t(done) * row_bytes, xt, y + done * out_, m,
                in_, out_);
      return rows;
    }
    auto& px = mine->padded_x;
    auto& py = mine->padded_y;
    px.assign(std::size_t(m) * row_bytes, 0);  // zero rows: +0.0 in float32 and bfloat16
    py.resize(std::size_t(m * out_));
    std::copy_n(x + std::size_t(done) * row_bytes, std::size_t(left) * row_bytes, px.data());
    run_block(*mine, *mm, h_->memory, px.data(), xt, py.data(), m, in_, out_);
    std::copy_n(py.data(), left * out_, y + done * out_);
    return rows;
  } catch (const dnnl::error& e) {
    warn_once(e);
  }
  return done;
}

}  // namespace spindle::nn
