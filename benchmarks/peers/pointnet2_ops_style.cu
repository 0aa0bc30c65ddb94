// The PointNet++ point ops as the widely used pointnet2_ops CUDA extension
// writes them, the GPU peer of dtrain's kernels in the training-step
// benchmark (pointnet2_train_torch.py --device cuda): one block per cloud for
// furthest point sampling with the running distances in global memory and a
// shared-memory tree for each pick's maximum; one thread per centre for ball
// query; one thread per output element for gathering and grouping, whose
// backward passes add with float atomics. Indices are int32, features
// float32, as there. Written for this benchmark (no code of that package);
// a C ABI on raw pointers and the caller's stream, loaded with ctypes, so it
// builds with nvcc alone in seconds.
//
//   nvcc -O3 -shared -Xcompiler -fPIC -o libpointnet2_ops_style.so pointnet2_ops_style.cu
#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kFpsThreads = 512;

__device__ void keep_larger(float* dists, int* indices, int a, int b) {
  if (dists[b] > dists[a]) {
    dists[a] = dists[b];
    indices[a] = indices[b];
  }
}

// xyz (B, N, 3); temp (B, N) running distances, set to 1e10 by the caller;
// idx (B, M): the first pick is point 0.
__global__ void fps_kernel(int n, int m, const float* __restrict__ xyz, float* __restrict__ temp,
                           int* __restrict__ idx) {
  __shared__ float dists[kFpsThreads];
  __shared__ int indices[kFpsThreads];
  const int batch = blockIdx.x;
  xyz += batch * n * 3;
  temp += batch * n;
  idx += batch * m;
  const int tid = threadIdx.x;
  int old = 0;
  if (tid == 0) {
    idx[0] = old;
  }
  __syncthreads();
  for (int j = 1; j < m; ++j) {
    const float x1 = xyz[old * 3];
    const float y1 = xyz[old * 3 + 1];
    const float z1 = xyz[old * 3 + 2];
    int best_index = 0;
    float best = -1;
    for (int k = tid; k < n; k += blockDim.x) {
      const float dx = xyz[k * 3] - x1;
      const float dy = xyz[k * 3 + 1] - y1;
      const float dz = xyz[k * 3 + 2] - z1;
      const float d = fminf(dx * dx + dy * dy + dz * dz, temp[k]);
      temp[k] = d;
      if (d > best) {
        best = d;
        best_index = k;
      }
    }
    dists[tid] = best;
    indices[tid] = best_index;
    __syncthreads();
    for (int half = kFpsThreads / 2; half > 0; half /= 2) {
      if (tid < half) {
        keep_larger(dists, indices, tid, tid + half);
      }
      __syncthreads();
    }
    old = indices[0];
    if (tid == 0) {
      idx[j] = old;
    }
    __syncthreads();
  }
}

// new_xyz (B, M, 3), xyz (B, N, 3); idx (B, M, nsample): the first nsample
// points within the radius, padded with the first one found.
__global__ void ball_query_kernel(int b, int n, int m, float radius2, int nsample,
                                  const float* __restrict__ new_xyz, const float* __restrict__ xyz,
                                  int* __restrict__ idx) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= b * m) {
    return;
  }
  const int batch = i / m;
  const float* centre = new_xyz + i * 3;
  const float* points = xyz + batch * n * 3;
  int* out = idx + i * nsample;
  int found = 0;
  for (int k = 0; k < n && found < nsample; ++k) {
    const float dx = points[k * 3] - centre[0];
    const float dy = points[k * 3 + 1] - centre[1];
    const float dz = points[k * 3 + 2] - centre[2];
    if (dx * dx + dy * dy + dz * dz < radius2) {
      if (found == 0) {
        for (int s = 0; s < nsample; ++s) {
          out[s] = k;
        }
      }
      out[found++] = k;
    }
  }
}

// points (B, C, N), idx (B, L) -> out (B, C, L); L = M or M * nsample.
__global__ void gather_kernel(int b, int c, int n, int l, const float* __restrict__ points,
                              const int* __restrict__ idx, float* __restrict__ out) {
  const long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (i >= static_cast<long>(b) * c * l) {
    return;
  }
  const int j = i % l;
  const int batch = i / (static_cast<long>(c) * l);
  const long row = i / l;  // batch * c + channel
  out[i] = points[row * n + idx[batch * l + j]];
}

__global__ void gather_grad_kernel(int b, int c, int n, int l, const float* __restrict__ grad_out,
                                   const int* __restrict__ idx, float* __restrict__ grad_points) {
  const long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (i >= static_cast<long>(b) * c * l) {
    return;
  }
  const int j = i % l;
  const int batch = i / (static_cast<long>(c) * l);
  const long row = i / l;
  atomicAdd(grad_points + row * n + idx[batch * l + j], grad_out[i]);
}

unsigned int blocks_for(long count, int threads) {
  return static_cast<unsigned int>((count + threads - 1) / threads);
}

}  // namespace

extern "C" {

// Each returns cudaGetLastError() after its launch (0: launched).

int p2s_fps(int b, int n, int m, const float* xyz, float* temp, int* idx, cudaStream_t stream) {
  fps_kernel<<<b, kFpsThreads, 0, stream>>>(n, m, xyz, temp, idx);
  return cudaGetLastError();
}

int p2s_ball_query(int b, int n, int m, float radius, int nsample, const float* new_xyz,
                   const float* xyz, int* idx, cudaStream_t stream) {
  constexpr int kThreads = 256;
  ball_query_kernel<<<blocks_for(static_cast<long>(b) * m, kThreads), kThreads, 0, stream>>>(
      b, n, m, radius * radius, nsample, new_xyz, xyz, idx);
  return cudaGetLastError();
}

int p2s_gather(int b, int c, int n, int l, const float* points, const int* idx, float* out,
               cudaStream_t stream) {
  constexpr int kThreads = 256;
  gather_kernel<<<blocks_for(static_cast<long>(b) * c * l, kThreads), kThreads, 0, stream>>>(
      b, c, n, l, points, idx, out);
  return cudaGetLastError();
}

// grad_points must be zeroed by the caller.
int p2s_gather_grad(int b, int c, int n, int l, const float* grad_out, const int* idx,
                    float* grad_points, cudaStream_t stream) {
  constexpr int kThreads = 256;
  gather_grad_kernel<<<blocks_for(static_cast<long>(b) * c * l, kThreads), kThreads, 0, stream>>>(
      b, c, n, l, grad_out, idx, grad_points);
  return cudaGetLastError();
}

}  // extern "C"
