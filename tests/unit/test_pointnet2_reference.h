// Brute-force references for the PointNet++ ops, written as plain loops
// straight from the definitions in dtrain/kernels/pointnet2.h, and a small
// central-difference gradient checker (LibTorch C++ has no gradcheck).
// Shared by tests/unit/test_pointnet2_*.cpp and tests/gpu/test_pointnet2_cuda.cpp.
#pragma once

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <utility>
#include <vector>

namespace dtrain::test {

// Squared distance in float32, point minus query, left to right (the
// documented rule, so references and kernels agree bit for bit).
inline float ref_distance(const float* q, const float* p) {
  const float dx = p[0] - q[0];
  const float dy = p[1] - q[1];
  const float dz = p[2] - q[2];
  const float xx = dx * dx;
  const float yy = dy * dy;
  const float zz = dz * dz;
  const float xy = xx + yy;
  return xy + zz;
}

inline at::Tensor fp32(const at::Tensor& t) {
  return t.to(at::kFloat).contiguous();
}

// FPS from the definition: at each step, recompute every unsampled point's
// minimum distance to the whole sampled set and take the largest, lowest
// index first. O(npoint^2 * N): keep inputs small.
inline at::Tensor ref_furthest_point_sample(const at::Tensor& xyz_in, int64_t npoint,
                                            int64_t start) {
  const at::Tensor xyz = fp32(xyz_in);
  const int64_t batch = xyz.size(0), n = xyz.size(1);
  at::Tensor out = at::empty({batch, npoint}, at::kLong);
  for (int64_t b = 0; b < batch; ++b) {
    const float* p = xyz.const_data_ptr<float>() + b * n * 3;
    std::vector<int64_t> picked{start};
    std::vector<bool> taken(n, false);
    taken[start] = true;
    while (static_cast<int64_t>(picked.size()) < npoint) {
      int64_t best = -1;
      float best_d = -1.0f;
      for (int64_t j = 0; j < n; ++j) {
        if (taken[j]) {
          continue;
        }
        float d = ref_distance(p + 3 * picked[0], p + 3 * j);
        for (int64_t s : picked) {
          d = std::min(d, ref_distance(p + 3 * s, p + 3 * j));
        }
        if (best < 0 || d > best_d) {
          best = j;
          best_d = d;
        }
      }
      picked.push_back(best);
      taken[best] = true;
    }
    std::copy(picked.begin(), picked.end(), out.mutable_data_ptr<int64_t>() + b * npoint);
  }
  return out;
}

inline std::pair<at::Tensor, at::Tensor> ref_ball_query(const at::Tensor& new_xyz_in,
                                                        const at::Tensor& xyz_in, double radius,
                                                        int64_t nsample) {
  const at::Tensor q = fp32(new_xyz_in), x = fp32(xyz_in);
  const int64_t batch = q.size(0), m = q.size(1), n = x.size(1);
  const float r = static_cast<float>(radius);
  const float r2 = r * r;
  at::Tensor idx = at::zeros({batch, m, nsample}, at::kLong);
  at::Tensor count = at::zeros({batch, m}, at::kLong);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < m; ++i) {
      std::vector<int64_t> hits;
      for (int64_t j = 0; j < n; ++j) {
        if (ref_distance(q.const_data_ptr<float>() + (b * m + i) * 3,
                         x.const_data_ptr<float>() + (b * n + j) * 3) < r2) {
          hits.push_back(j);
        }
      }
      const int64_t found = std::min<int64_t>(nsample, hits.size());
      count.mutable_data_ptr<int64_t>()[b * m + i] = found;
      for (int64_t s = 0; s < nsample; ++s) {
        idx.mutable_data_ptr<int64_t>()[(b * m + i) * nsample + s] =
            found == 0 ? 0 : hits[s < found ? s : 0];
      }
    }
  }
  return {idx, count};
}

// The documented order of kNN and three-NN: a NaN squared distance ranks
// as +inf (after every finite one; the stable sort keeps the lowest index
// first among equal ranks).
inline float ref_distance_rank(float d) {
  return std::isnan(d) ? std::numeric_limits<float>::infinity() : d;
}

// Exact equality of two float tensors where NaN equals NaN (at::equal
// takes NaN as unequal to itself).
inline bool equal_with_nan(const at::Tensor& a, const at::Tensor& b) {
  if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type()) {
    return false;
  }
  const at::Tensor a_nan = at::isnan(a);
  const at::Tensor b_nan = at::isnan(b);
  return at::equal(a_nan, b_nan) && at::equal(a.masked_fill(a_nan, 0), b.masked_fill(b_nan, 0));
}

// (idx, dist2) of the k nearest by a stable sort of all distances' ranks.
inline std::pair<at::Tensor, at::Tensor> ref_knn(const at::Tensor& new_xyz_in,
                                                 const at::Tensor& xyz_in, int64_t k) {
  const at::Tensor q = fp32(new_xyz_in), x = fp32(xyz_in);
  const int64_t batch = q.size(0), m = q.size(1), n = x.size(1);
  at::Tensor idx = at::empty({batch, m, k}, at::kLong);
  at::Tensor dist = at::empty({batch, m, k}, at::kFloat);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < m; ++i) {
      std::vector<float> d(n);
      for (int64_t j = 0; j < n; ++j) {
        d[j] = ref_distance(q.const_data_ptr<float>() + (b * m + i) * 3,
                            x.const_data_ptr<float>() + (b * n + j) * 3);
      }
      std::vector<int64_t> order(n);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t c) {
        return ref_distance_rank(d[a]) < ref_distance_rank(d[c]);
      });
      for (int64_t s = 0; s < k; ++s) {
        idx.mutable_data_ptr<int64_t>()[(b * m + i) * k + s] = order[s];
        dist.mutable_data_ptr<float>()[(b * m + i) * k + s] = d[order[s]];
      }
    }
  }
  return {idx, dist};
}

// out[b][c][l] = features[b][c][idx[b][l]] for idx of any trailing shape.
inline at::Tensor ref_gather(const at::Tensor& features, const at::Tensor& idx) {
  const at::Tensor f = features.to(at::kDouble).contiguous();
  const at::Tensor flat = idx.reshape({idx.size(0), -1}).contiguous();
  const int64_t batch = f.size(0), channels = f.size(1), n = f.size(2), l = flat.size(1);
  at::Tensor out = at::empty({batch, channels, l}, at::kDouble);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t i = 0; i < l; ++i) {
        out.mutable_data_ptr<double>()[(b * channels + c) * l + i] =
            f.const_data_ptr<double>()[(b * channels + c) * n +
                                       flat.const_data_ptr<int64_t>()[b * l + i]];
      }
    }
  }
  std::vector<int64_t> shape{batch, channels};
  for (int64_t d = 1; d < idx.dim(); ++d) {
    shape.push_back(idx.size(d));
  }
  return out.view(shape).to(features.scalar_type());
}

// Scatter-add in the documented order (increasing l), accumulating in
// `acc_type`: grad[b][c][idx[b][l]] += weight[b][l] * grad_out[b][c][l / group].
inline at::Tensor ref_scatter(const at::Tensor& grad_out_in, const at::Tensor& idx,
                              const at::Tensor& weight_in, int64_t n, at::ScalarType acc_type) {
  const at::Tensor g = grad_out_in.reshape({grad_out_in.size(0), grad_out_in.size(1), -1})
                           .to(at::kDouble)
                           .contiguous();
  const at::Tensor flat = idx.reshape({idx.size(0), -1}).contiguous();
  const at::Tensor w = weight_in.defined()
                           ? weight_in.reshape({idx.size(0), -1}).to(at::kDouble).contiguous()
                           : at::Tensor();
  const int64_t batch = g.size(0), channels = g.size(1), out_len = g.size(2), l = flat.size(1);
  const int64_t group = l / out_len;
  at::Tensor grad = at::zeros({batch, channels, n}, at::kDouble);
  const bool single = acc_type == at::kFloat;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t c = 0; c < channels; ++c) {
      std::vector<float> acc_f(n, 0.0f);
      std::vector<double> acc_d(n, 0.0);
      for (int64_t i = 0; i < l; ++i) {
        const int64_t j = flat.const_data_ptr<int64_t>()[b * l + i];
        const double gv = g.const_data_ptr<double>()[(b * channels + c) * out_len + i / group];
        const double wv = w.defined() ? w.const_data_ptr<double>()[b * l + i] : 1.0;
        if (single) {
          const float term = w.defined() ? static_cast<float>(wv) * static_cast<float>(gv)
                                         : static_cast<float>(gv);
          acc_f[j] = acc_f[j] + term;
        } else {
          acc_d[j] = acc_d[j] + (w.defined() ? wv * gv : gv);
        }
      }
      for (int64_t j = 0; j < n; ++j) {
        grad.mutable_data_ptr<double>()[(b * channels + c) * n + j] =
            single ? static_cast<double>(acc_f[j]) : acc_d[j];
      }
    }
  }
  return grad.to(grad_out_in.scalar_type());
}

// out[b][c][i] = sum_t weight[b][i][t] * features[b][c][idx[b][i][t]], in double.
inline at::Tensor ref_interpolate(const at::Tensor& features, const at::Tensor& idx,
                                  const at::Tensor& weight) {
  const at::Tensor f = features.to(at::kDouble).contiguous();
  const at::Tensor w = weight.to(at::kDouble).contiguous();
  const at::Tensor ix = idx.contiguous();
  const int64_t batch = f.size(0), channels = f.size(1), m = f.size(2), n = ix.size(1);
  at::Tensor out = at::zeros({batch, channels, n}, at::kDouble);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t i = 0; i < n; ++i) {
        double acc = 0;
        for (int64_t t = 0; t < 3; ++t) {
          const int64_t e = (b * n + i) * 3 + t;
          acc +=
              w.const_data_ptr<double>()[e] *
              f.const_data_ptr<double>()[(b * channels + c) * m + ix.const_data_ptr<int64_t>()[e]];
        }
        out.mutable_data_ptr<double>()[(b * channels + c) * n + i] = acc;
      }
    }
  }
  return out;
}

// Central differences of a scalar function of `input` (float64), eps 1e-6.
inline at::Tensor numerical_gradient(const std::function<double(const at::Tensor&)>& fn,
                                     const at::Tensor& input, double eps = 1e-6) {
  at::Tensor x = input.detach().clone().contiguous();
  at::Tensor grad = at::zeros_like(x);
  double* data = x.mutable_data_ptr<double>();
  for (int64_t e = 0; e < x.numel(); ++e) {
    const double saved = data[e];
    data[e] = saved + eps;
    const double plus = fn(x);
    data[e] = saved - eps;
    const double minus = fn(x);
    data[e] = saved;
    grad.mutable_data_ptr<double>()[e] = (plus - minus) / (2 * eps);
  }
  return grad;
}

}  // namespace dtrain::test
