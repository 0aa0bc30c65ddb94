// Ball query, kNN and three-NN on CPU: one task per range of (batch, query)
// pairs, each scanning the batch element's points in index order.
// Distances follow Note [FPS distance] (src/cpu/furthest_point_sample.cpp).
#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>

#include <cstdint>
#include <tuple>

#include "../dispatch.h"

namespace dtrain::kernels::detail {

namespace {

inline float squared_distance(const float* a, const float* b) {
  const float dx = b[0] - a[0];
  const float dy = b[1] - a[1];
  const float dz = b[2] - a[2];
  return dx * dx + dy * dy + dz * dz;
}

// The k smallest (distance, index) pairs seen so far, ascending; an equal
// distance never displaces an earlier (lower) index. CUDA keeps the same
// rule (src/cuda/knn.cu, three_nn.cu).
struct NearestK {
  float* dist;
  int64_t* idx;
  int64_t k;
  int64_t filled = 0;

  void offer(float d, int64_t j) {
    if (filled == k && !(d < dist[k - 1])) {
      return;
    }
    int64_t pos = filled < k ? filled++ : k - 1;
    while (pos > 0 && dist[pos - 1] > d) {
      dist[pos] = dist[pos - 1];
      idx[pos] = idx[pos - 1];
      --pos;
    }
    dist[pos] = d;
    idx[pos] = j;
  }
};

// Runs fn(b, m) for every query, in parallel.
template <typename Fn>
void for_each_query(int64_t batch, int64_t queries, int64_t grain, const Fn& fn) {
  at::parallel_for(0, batch * queries, grain, [&](int64_t begin, int64_t end) {
    for (int64_t q = begin; q < end; ++q) {
      fn(q / queries, q % queries);
    }
  });
}

// Rows of k nearest points into (dist, idx) of shape (B, M, k).
void nearest_k(const at::Tensor& new_xyz, const at::Tensor& xyz, int64_t k, float* dist_out,
               int64_t* idx_out) {
  const int64_t batch = new_xyz.size(0);
  const int64_t m = new_xyz.size(1);
  const int64_t n = xyz.size(1);
  const float* queries = new_xyz.const_data_ptr<float>();
  const float* points = xyz.const_data_ptr<float>();
  for_each_query(batch, m, /*grain=*/16, [&](int64_t b, int64_t i) {
    const float* q = queries + (b * m + i) * 3;
    const float* p = points + b * n * 3;
    NearestK best{dist_out + (b * m + i) * k, idx_out + (b * m + i) * k, k};
    for (int64_t j = 0; j < n; ++j) {
      best.offer(squared_distance(q, p + 3 * j), j);
    }
  });
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> ball_query_cpu(const at::Tensor& new_xyz, const at::Tensor& xyz,
                                                  float radius2, int64_t nsample) {
  const int64_t batch = new_xyz.size(0);
  const int64_t m = new_xyz.size(1);
  const int64_t n = xyz.size(1);
  const auto long_options = new_xyz.options().dtype(at::kLong);
  at::Tensor idx = at::empty({batch, m, nsample}, long_options);
  at::Tensor count = at::empty({batch, m}, long_options);
  const float* queries = new_xyz.const_data_ptr<float>();
  const float* points = xyz.const_data_ptr<float>();
  int64_t* idx_data = idx.mutable_data_ptr<int64_t>();
  int64_t* count_data = count.mutable_data_ptr<int64_t>();
  for_each_query(batch, m, /*grain=*/16, [&](int64_t b, int64_t i) {
    const float* q = queries + (b * m + i) * 3;
    const float* p = points + b * n * 3;
    int64_t* row = idx_data + (b * m + i) * nsample;
    int64_t found = 0;
    for (int64_t j = 0; j < n && found < nsample; ++j) {
      if (squared_distance(q, p + 3 * j) < radius2) {
        row[found++] = j;
      }
    }
    const int64_t pad = found > 0 ? row[0] : 0;
    for (int64_t s = found; s < nsample; ++s) {
      row[s] = pad;
    }
    count_data[b * m + i] = found;
  });
  return {idx, count};
}

std::tuple<at::Tensor, at::Tensor> knn_cpu(const at::Tensor& new_xyz, const at::Tensor& xyz,
                                           int64_t k) {
  at::Tensor idx =
      at::empty({new_xyz.size(0), new_xyz.size(1), k}, new_xyz.options().dtype(at::kLong));
  at::Tensor dist2 = at::empty(idx.sizes(), new_xyz.options().dtype(at::kFloat));
  nearest_k(new_xyz, xyz, k, dist2.mutable_data_ptr<float>(), idx.mutable_data_ptr<int64_t>());
  return {idx, dist2};
}

std::tuple<at::Tensor, at::Tensor> three_nn_cpu(const at::Tensor& unknown,
                                                const at::Tensor& known) {
  at::Tensor idx =
      at::empty({unknown.size(0), unknown.size(1), 3}, unknown.options().dtype(at::kLong));
  at::Tensor dist2 = at::empty(idx.sizes(), unknown.options().dtype(at::kFloat));
  nearest_k(unknown, known, 3, dist2.mutable_data_ptr<float>(), idx.mutable_data_ptr<int64_t>());
  return {dist2, idx};
}

}  // namespace dtrain::kernels::detail
