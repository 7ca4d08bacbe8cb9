// Each Vulkan kernel against kiln's CPU math (the micro-kernels' contracts in
// codegen/common/ukernel_abi.h), on weights quantised by runtime-min's own quantiser.
// Tolerances: the GPU sums in a different order and has no fp64, so sums agree to a few
// float roundings of the sum of |terms|; decoding (embed) is exact.
#include "VulkanTestDevice.h"

#include <algorithm>
#include <cmath>
#include <cstring>

extern "C" {
#include "kiln/quant.h"
}

namespace kiln::vktest {
namespace {

constexpr uint32_t kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ8_0 = 8, kQ4_K = 12, kQ5_K = 13,
                   kQ6_K = 14;

// Rows of `in` elements stored in `format`, padded with zeros to whole blocks.
struct Matrix {
  uint32_t rows, in, stride;
  std::vector<uint8_t> bytes; // rows * stride
  std::vector<float> values;  // rows * in, the stored (decoded) values
};

Matrix makeMatrix(uint32_t format, uint32_t rows, uint32_t in, uint32_t seed) {
  const uint32_t block = (uint32_t)kiln_ggml_block_elems(format);
  const uint32_t padded = (in + block - 1) / block * block;
  uint64_t stride = 0;
  EXPECT_EQ(kiln_ggml_row_bytes(format, padded, &stride), KILN_STATUS_OK);
  Matrix m{rows, in, (uint32_t)stride, std::vector<uint8_t>(rows * stride),
           std::vector<float>(size_t(rows) * in)};
  std::vector<float> src = randomFloats(size_t(rows) * padded, seed), decoded(padded);
  for (uint32_t r = 0; r < rows; ++r) {
    for (uint32_t i = in; i < padded; ++i)
      src[size_t(r) * padded + i] = 0.0f;
    EXPECT_EQ(kiln_quantize(format, &src[size_t(r) * padded], &m.bytes[r * stride], padded),
              KILN_STATUS_OK);
    EXPECT_EQ(kiln_dequantize(format, &m.bytes[r * stride], decoded.data(), padded),
              KILN_STATUS_OK);
    std::copy(decoded.begin(), decoded.begin() + in, m.values.begin() + size_t(r) * in);
  }
  return m;
}

struct LinearPush {
  uint32_t in, out, stride, wOffset, xOffset, yOffset, resOffset, hasResidual, n, yStride;
};

struct LinearCase {
  uint32_t format, in, out, tokens;
  bool residual;
  bool matmul; // matmul.comp (prefill) rather than linear.comp (decode)
  bool dot = false; // linear_dot.comp: linear.comp's variant on integer dot products
  bool f16 = false; // matmul_f16.comp: matmul.comp's variant in fp16 arithmetic
};

// x as linear_dot.comp (and the CPU's integer kernels, packed_common.h) meets q8_0/q4_0
// weights: each block of 32 quantised to int8 with d = amax / 127, round to nearest even,
// then decoded, so the reference sums the same products the integer sums hold.
std::vector<float> quantisedActivations(const std::vector<float> &x, uint32_t in) {
  std::vector<float> out(x.size());
  for (size_t row = 0; row < x.size() / in; ++row)
    for (uint32_t b = 0; b < in; b += 32) {
      const float *v = &x[row * in + b];
      const uint32_t count = std::min(32u, in - b);
      float amax = 0;
      for (uint32_t j = 0; j < count; ++j)
        amax = std::max(amax, std::fabs(v[j]));
      const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
      for (uint32_t j = 0; j < count; ++j)
        out[row * in + b + j] = std::nearbyint(v[j] * id) * d;
    }
  return out;
}

class VulkanLinear : public VulkanTest, public ::testing::WithParamInterface<LinearCase> {};

TEST_P(VulkanLinear, MatchesTheDecodedWeights) {
  const LinearCase c = GetParam();
  Matrix m = makeMatrix(c.format, c.out, c.in, c.in * 31 + c.out);
  // The weights start 2 bytes into the buffer when the format allows (its rows are only
  // 2-aligned anyway), so unaligned loads are exercised from the first row.
  const uint32_t lead = c.format == kF32 ? 4 : 2;
  std::vector<uint8_t> w(lead, 0xAB);
  w.insert(w.end(), m.bytes.begin(), m.bytes.end());
  std::vector<float> x = randomFloats(size_t(c.tokens) * c.in, 7);
  std::vector<float> res = randomFloats(size_t(c.tokens) * c.out, 9);
  auto wb = upload(w);
  auto xb = upload(x);
  auto yb = upload(std::vector<float>(size_t(c.tokens) * c.out, NAN));
  auto rb = upload(res);
  // Token blocks: 8 (more than a decode step's 1 token), or 2 (3 tokens: a partial block).
  const uint32_t rows = 2, tokenBlock = c.tokens == 1 ? 8 : 2;
  const char *kernel = c.f16 ? "matmul_f16" : c.matmul ? "matmul" : c.dot ? "linear_dot" : "linear";
  Pipeline p = pipeline(kernel, 4, sizeof(LinearPush),
                        {64, c.format, rows, tokenBlock});
  LinearPush push{c.in, c.out, m.stride, lead, 0, 0, 0, c.residual ? 1u : 0u, c.tokens, c.out};
  run(p.get(), {wb.get(), xb.get(), yb.get(), rb.get()}, push,
      c.matmul ? groups(c.out, 64) : groups(c.out, rows), groups(c.tokens, tokenBlock));
  std::vector<float> y = download<float>(yb.get(), size_t(c.tokens) * c.out);
  if (c.dot && (c.format == kQ8_0 || c.format == kQ4_0))
    x = quantisedActivations(x, c.in);
  for (uint32_t t = 0; t < c.tokens; ++t)
    for (uint32_t o = 0; o < c.out; ++o) {
      double ref = 0, mag = 0;
      for (uint32_t i = 0; i < c.in; ++i) {
        const double term = double(m.values[size_t(o) * c.in + i]) * x[size_t(t) * c.in + i];
        ref += term;
        mag += std::fabs(term);
      }
      if (c.residual) {
        ref += res[size_t(t) * c.out + o];
        mag += std::fabs(res[size_t(t) * c.out + o]);
      }
      // fp16 rounds each weight, activation and 4-product sum: ~2^-11 of each term
      ASSERT_NEAR(y[size_t(t) * c.out + o], ref, (c.f16 ? 2e-3 : 1e-5) * mag + 1e-6)
          << "token " << t << " row " << o;
    }
}

std::vector<LinearCase> linearCases() {
  std::vector<LinearCase> cases;
  for (uint32_t f : {kF32, kF16, kQ8_0, kQ4_0, kQ4_1})
    for (auto [in, out] :
         {std::pair{64u, 64u}, {172u, 7u}, {256u, 257u}, {300u, 9u}, {4096u, 33u}})
      for (uint32_t tokens : {1u, 3u})
        for (bool matmul : {false, true})
          cases.push_back({f, in, out, tokens, tokens == 3, matmul});
  // linear_dot: every format (f32/f16 take the float path), a row longer than its shared
  // chunk of 2048 (5000: three chunks, a partial last block), both token counts.
  for (uint32_t f : {kF32, kF16, kQ8_0, kQ4_0, kQ4_1})
    for (auto [in, out] : {std::pair{64u, 64u}, {172u, 7u}, {5000u, 33u}})
      for (uint32_t tokens : {1u, 3u})
        cases.push_back({f, in, out, tokens, tokens == 3, false, true});
  // K-quants: whole super-blocks, every kernel that reads weights; 2048 gives each of the
  // 64 threads one sub-block of 32.
  for (uint32_t f : {kQ4_K, kQ5_K, kQ6_K})
    for (auto [in, out] : {std::pair{256u, 33u}, {768u, 7u}, {2048u, 5u}})
      for (uint32_t tokens : {1u, 3u}) {
        for (bool matmul : {false, true})
          cases.push_back({f, in, out, tokens, tokens == 3, matmul});
        cases.push_back({f, in, out, tokens, tokens == 3, false, true});
        cases.push_back({f, in, out, tokens, tokens == 3, true, false, true});
      }
  // matmul_f16: every format, a row with a partial last block (172), 1 and 3 tokens.
  for (uint32_t f : {kF32, kF16, kQ8_0, kQ4_0, kQ4_1})
    for (auto [in, out] : {std::pair{64u, 64u}, {172u, 7u}, {4096u, 33u}})
      for (uint32_t tokens : {1u, 3u})
        cases.push_back({f, in, out, tokens, tokens == 3, true, false, true});
  return cases;
}

std::string linearName(const ::testing::TestParamInfo<LinearCase> &info) {
  const char *f[] = {"f32", "f16", "q4_0", "q4_1", "", "", "", "", "q8_0", "", "", "",
                     "q4_K", "q5_K", "q6_K"};
  const LinearCase &c = info.param;
  return std::string(f[c.format]) + "_" + std::to_string(c.in) + "x" + std::to_string(c.out) +
         "_t" + std::to_string(c.tokens) + (c.residual ? "_residual" : "") +
         (c.matmul ? "_matmul" : "") + (c.dot ? "_dot" : "") + (c.f16 ? "_f16" : "");
}

INSTANTIATE_TEST_SUITE_P(Formats, VulkanLinear, ::testing::ValuesIn(linearCases()), linearName);

// A linear whose rows are split over dispatches (weights larger than one binding): each
// dispatch takes rows r0.. of W, writes columns r0.. of every token's y row (y_stride the
// whole width) and adds the same columns of the residual; together they are one linear.
TEST_F(VulkanTest, SplitRowsWriteTheirColumns) {
  const uint32_t in = 256, out = 130, tokens = 3, split = 64;
  for (const char *kernel : {"linear", "linear_dot", "matmul", "matmul_f16"}) {
    SCOPED_TRACE(kernel);
    const bool matmul = kernel[0] == 'm';
    Matrix m = makeMatrix(kQ8_0, out, in, 17);
    std::vector<float> x = randomFloats(size_t(tokens) * in, 7);
    std::vector<float> res = randomFloats(size_t(tokens) * out, 9);
    auto wb = upload(m.bytes);
    auto xb = upload(x);
    auto yb = upload(std::vector<float>(size_t(tokens) * out, NAN));
    auto rb = upload(res);
    Pipeline p = pipeline(kernel, 4, sizeof(LinearPush), {64, kQ8_0, 2, 2});
    for (uint32_t r0 : {0u, split}) {
      const uint32_t rows = r0 ? out - split : split;
      LinearPush push{in, rows, m.stride, r0 * m.stride, 0, r0, r0, 1, tokens, out};
      run(p.get(), {wb.get(), xb.get(), yb.get(), rb.get()}, push,
          matmul ? groups(rows, 64) : groups(rows, 2), groups(tokens, 2));
    }
    std::vector<float> y = download<float>(yb.get(), size_t(tokens) * out);
    if (!strcmp(kernel, "linear_dot"))
      x = quantisedActivations(x, in);
    for (uint32_t t = 0; t < tokens; ++t)
      for (uint32_t o = 0; o < out; ++o) {
        double ref = res[size_t(t) * out + o], mag = std::fabs(ref);
        for (uint32_t i = 0; i < in; ++i) {
          ref += double(m.values[size_t(o) * in + i]) * x[size_t(t) * in + i];
          mag += std::fabs(double(m.values[size_t(o) * in + i]) * x[size_t(t) * in + i]);
        }
        ASSERT_NEAR(y[size_t(t) * out + o], ref, (matmul && kernel[6] ? 2e-3 : 1e-5) * mag + 1e-6)
            << "token " << t << " row " << o;
      }
  }
}

struct EmbedPush {
  uint32_t dim, n, stride, wOffset, idsOffset, outOffset;
};

// Decoding a row is exact: the GPU's q * d is the same float product as kiln_dequantize's.
TEST_F(VulkanTest, EmbedDecodesRowsExactly) {
  for (uint32_t format : {kF32, kF16, kQ8_0, kQ4_0, kQ4_1, kQ4_K, kQ5_K, kQ6_K}) {
    SCOPED_TRACE(format);
    const uint32_t dim = 96, vocab = 11;
    Matrix m = makeMatrix(format, vocab, dim, 5);
    std::vector<int32_t> ids = {3, 0, 10, 3};
    auto wb = upload(m.bytes);
    auto ib = upload(ids);
    auto ob = upload(std::vector<float>(ids.size() * dim, NAN));
    Pipeline p = pipeline("embed", 3, sizeof(EmbedPush), {64, format});
    EmbedPush push{dim, (uint32_t)ids.size(), m.stride, 0, 0, 0};
    run(p.get(), {wb.get(), ib.get(), ob.get()}, push, groups(dim, 64), (uint32_t)ids.size());
    std::vector<float> out = download<float>(ob.get(), ids.size() * dim);
    for (size_t t = 0; t < ids.size(); ++t)
      for (uint32_t i = 0; i < dim; ++i)
        ASSERT_EQ(out[t * dim + i], m.values[size_t(ids[t]) * dim + i]) << t << " " << i;
  }
}

struct NormPush {
  uint32_t dim, wOffset, xOffset, outOffset;
  float eps;
  uint32_t hasWeight;
};

TEST_F(VulkanTest, RmsNormMatchesTheCpuFormula) {
  for (uint32_t format : {kF32, kF16, 99u /* no weight */})
    for (uint32_t dim : {64u, 172u, 2048u}) {
      SCOPED_TRACE(std::to_string(format) + " dim " + std::to_string(dim));
      const uint32_t n = 3;
      const bool hasWeight = format != 99u;
      Matrix w = makeMatrix(hasWeight ? format : kF32, 1, dim, dim);
      std::vector<float> x = randomFloats(size_t(n) * dim, 3);
      auto wb = upload(w.bytes);
      auto xb = upload(x);
      auto ob = upload(std::vector<float>(x.size(), NAN));
      Pipeline p = pipeline("rms_norm", 3, sizeof(NormPush), {64, hasWeight ? format : kF32});
      NormPush push{dim, 0, 0, 0, 1e-5f, hasWeight ? 1u : 0u};
      run(p.get(), {wb.get(), xb.get(), ob.get()}, push, n);
      std::vector<float> out = download<float>(ob.get(), x.size());
      for (uint32_t t = 0; t < n; ++t) {
        double sum = 0;
        for (uint32_t i = 0; i < dim; ++i)
          sum += double(x[t * dim + i]) * x[t * dim + i];
        const double scale = 1.0 / std::sqrt(sum / dim + 1e-5);
        for (uint32_t i = 0; i < dim; ++i) {
          const double ref = x[t * dim + i] * scale * (hasWeight ? w.values[i] : 1.0f);
          ASSERT_NEAR(out[t * dim + i], ref, 2e-6 * std::fabs(ref) + 1e-7) << t << " " << i;
        }
      }
    }
}

struct RopePush {
  uint32_t n, width, headDim, rotaryDims, rotateHalf, xOffset, cosOffset, sinOffset, posOffset;
};

TEST_F(VulkanTest, RopeRotatesPairsAsTheCpuDoes) {
  for (uint32_t rotateHalf : {0u, 1u})
    for (auto [headDim, rotary] : {std::pair{8u, 8u}, {64u, 64u}, {64u, 32u}}) {
      SCOPED_TRACE(std::to_string(rotateHalf) + " " + std::to_string(headDim) + " " +
                   std::to_string(rotary));
      const uint32_t heads = 4, width = heads * headDim, maxPos = 32, half = rotary / 2;
      std::vector<int32_t> pos = {0, 5, 31};
      const uint32_t n = (uint32_t)pos.size();
      std::vector<float> tables(2 * size_t(maxPos) * half);
      for (uint32_t p = 0; p < maxPos; ++p)
        for (uint32_t i = 0; i < half; ++i) {
          const double a = p * std::pow(10000.0, -2.0 * i / rotary);
          tables[p * half + i] = (float)std::cos(a);
          tables[size_t(maxPos) * half + p * half + i] = (float)std::sin(a);
        }
      std::vector<float> x = randomFloats(size_t(n) * width, 11);
      auto tb = upload(tables);
      auto xb = upload(x);
      auto pb = upload(pos);
      Pipeline pl = pipeline("rope", 3, sizeof(RopePush), {64});
      RopePush push{n, width, headDim, rotary, rotateHalf, 0, 0, maxPos * half, 0};
      run(pl.get(), {tb.get(), xb.get(), pb.get()}, push, groups(half * heads, 64), n);
      std::vector<float> out = download<float>(xb.get(), x.size());
      const uint32_t step = rotateHalf ? 1 : 2, off = rotateHalf ? half : 1;
      std::vector<float> ref = x;
      for (uint32_t t = 0; t < n; ++t)
        for (uint32_t h = 0; h < heads; ++h)
          for (uint32_t i = 0; i < half; ++i) {
            const size_t b = size_t(t) * width + h * headDim + i * step;
            const float c = tables[pos[t] * half + i];
            const float s = tables[size_t(maxPos) * half + pos[t] * half + i];
            ref[b] = x[b] * c - x[b + off] * s;
            ref[b + off] = x[b] * s + x[b + off] * c;
          }
      for (size_t i = 0; i < x.size(); ++i)
        ASSERT_NEAR(out[i], ref[i], 1e-6) << i; // only FMA contraction may differ
    }
}

struct EltwisePush {
  uint32_t count, aOffset, bOffset, outOffset;
};

TEST_F(VulkanTest, EltwiseOps) {
  const uint32_t count = 1000; // not a multiple of the workgroup
  std::vector<float> a = randomFloats(count, 1), b = randomFloats(count, 2);
  for (auto &v : a)
    v *= 12.0f; // silu's tails
  for (uint32_t op = 0; op < 4; ++op) {
    SCOPED_TRACE(op);
    auto ab = upload(a);
    auto bb = upload(b);
    auto ob = upload(std::vector<float>(count, NAN));
    Pipeline p = pipeline("eltwise", 3, sizeof(EltwisePush), {64, op});
    run(p.get(), {ab.get(), bb.get(), ob.get()}, EltwisePush{count, 0, 0, 0}, groups(count, 64));
    std::vector<float> out = download<float>(ob.get(), count);
    for (uint32_t i = 0; i < count; ++i) {
      const double silu = a[i] / (1.0 + std::exp(-double(a[i])));
      const double ref = op == 0 ? double(a[i]) + b[i]
                         : op == 1 ? double(a[i]) * b[i]
                         : op == 2 ? silu
                                   : silu * b[i];
      ASSERT_NEAR(out[i], ref, 4e-6 * std::fabs(ref) + 1e-7) << i;
    }
  }
}

} // namespace
} // namespace kiln::vktest
