#include "compiler/eval/OpKernels.h"

#include <algorithm>
#include <cmath>

#include "codegen/common/RopeAngles.h"

namespace kiln {

bool embedRows(const Matrix &table, const std::vector<int32_t> &ids, Matrix &out,
               std::string &error) {
  out.resize(Eigen::Index(ids.size()), table.cols());
  for (size_t t = 0; t < ids.size(); ++t) {
    if (ids[t] < 0 || ids[t] >= table.rows()) {
      error = "token id " + std::to_string(ids[t]) + " is outside the vocabulary [0, " +
              std::to_string(table.rows()) + ")";
      return false;
    }
    out.row(Eigen::Index(t)) = table.row(ids[t]);
  }
  return true;
}

void rmsNorm(const Matrix &x, const Matrix &weight, float eps, Matrix &out) {
  out.resize(x.rows(), x.cols());
  for (Eigen::Index t = 0; t < x.rows(); ++t) {
    double sum = 0.0;
    for (Eigen::Index i = 0; i < x.cols(); ++i)
      sum += double(x(t, i) * x(t, i));
    const float mean = float(sum / double(x.cols()));
    const float scale = 1.0f / std::sqrt(mean + eps);
    for (Eigen::Index i = 0; i < x.cols(); ++i)
      out(t, i) = (x(t, i) * scale) * weight(0, i);
  }
}

void applyRope(const Matrix &x, const std::vector<int32_t> &positions, const RopeParams &p,
               Matrix &out) {
  out = x;
  const int32_t heads = int32_t(x.cols()) / p.headDim;
  const float *factors = p.freqFactors.empty() ? nullptr : p.freqFactors.data();
  std::vector<float> angles(size_t(p.rotaryDims / 2));
  for (Eigen::Index t = 0; t < x.rows(); ++t) {
    codegen::ropeAngles(float(positions[size_t(t)]), p.theta, p.rotaryDims, factors,
                        angles.data());
    for (int32_t i = 0; i < p.rotaryDims / 2; ++i) {
      const float c = std::cos(angles[size_t(i)]), s = std::sin(angles[size_t(i)]);
      for (int32_t h = 0; h < heads; ++h) {
        const int32_t base = h * p.headDim;
        const int32_t a = base + (p.rotateHalf ? i : 2 * i);
        const int32_t b = base + (p.rotateHalf ? i + p.rotaryDims / 2 : 2 * i + 1);
        const float x0 = x(t, a), x1 = x(t, b);
        out(t, a) = x0 * c - x1 * s;
        out(t, b) = x0 * s + x1 * c;
      }
    }
  }
}

void roundKvRow(KvElem e, int32_t headDim, float *row, int64_t width) {
  if (e == KvElem::F16) {
    for (int64_t i = 0; i < width; ++i)
      row[i] = float(Eigen::half(row[i]));
  } else if (e == KvElem::I8) {
    for (int64_t h = 0; h + headDim <= width; h += headDim) {
      float amax = 0.0f;
      for (int32_t i = 0; i < headDim; ++i)
        amax = std::max(amax, std::fabs(row[h + i]));
      const float scale = amax / 127.0f;
      const float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
      for (int32_t i = 0; i < headDim; ++i) {
        // nearest, ties to even, as the kernels round
        const float qv = std::min(127.0f, std::max(-127.0f, std::nearbyint(row[h + i] * inv)));
        row[h + i] = qv * scale;
      }
    }
  }
}

bool attention(const Matrix &q, const Matrix &k, const Matrix &v,
               const std::vector<int32_t> &positions, const AttentionParams &p,
               KvCache &cache, Matrix &out, std::string &error, const AttentionProbe *probe) {
  for (size_t t = 0; t < positions.size(); ++t) {
    const int32_t pos = positions[t];
    if (pos < 0 || pos >= cache.k.rows()) {
      error = "position " + std::to_string(pos) + " is outside the KV cache of " +
              std::to_string(cache.k.rows()) + " positions";
      return false;
    }
    cache.k.row(pos) = k.row(Eigen::Index(t));
    cache.v.row(pos) = v.row(Eigen::Index(t));
    roundKvRow(cache.format.k, p.headDim, cache.k.row(pos).data(), cache.k.cols());
    roundKvRow(cache.format.v, p.headDim, cache.v.row(pos).data(), cache.v.cols());
    cache.length = std::max<uint32_t>(cache.length, uint32_t(pos) + 1);
  }
  const int32_t d = p.headDim;
  out.resize(q.rows(), q.cols());
  Eigen::VectorXf scores;
  for (Eigen::Index t = 0; t < q.rows(); ++t) {
    const Eigen::Index n = positions[size_t(t)] + 1; // causal: positions 0..pos
    for (int32_t h = 0; h < p.heads; ++h) {
      const int32_t g = p.kvHeadOf[size_t(h)];
      auto qh = q.row(t).segment(h * d, d);
      auto kh = cache.k.block(0, g * d, n, d);
      auto vh = cache.v.block(0, g * d, n, d);
      scores = (kh * qh.transpose()) * p.scale;
      scores = (scores.array() - scores.maxCoeff()).exp();
      scores /= scores.sum();
      if (probe)
        (*probe)(t, h, scores);
      out.row(t).segment(h * d, d) = scores.transpose() * vh;
    }
  }
  return true;
}

} // namespace kiln
