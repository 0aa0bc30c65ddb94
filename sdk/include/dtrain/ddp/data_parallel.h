// DataParallel: one process driving several GPUs (torch.nn.DataParallel).
//
//   torch::nn::Sequential net(...);
//   dtrain::ddp::DataParallel<torch::nn::Sequential> model(net);   // every visible GPU
//   auto loss = criterion(model(batch), labels);                   // batch split along dim 0
//   loss.backward();                                               // grads land in net's
//   parameters
//
// Each forward scatters the input along `dim` over the devices, copies the
// module to each (Module::clone, so the module must be Cloneable, e.g. a
// Sequential or a torch::nn::Cloneable<...>), runs the copies on parallel
// threads and gathers the outputs on the output device; backward sums the
// copies' gradients into the original module's parameters. That is
// LibTorch's torch::nn::parallel::data_parallel, which this class wraps
// with device selection, checks and a direct path for one device.
//
// With one device (one GPU, or none: the CPU), forward just runs the
// module there: no copies, no threads. Prefer DistributedDataParallel
// (one process per GPU) for speed; this is the simple single-process way.
// As in PyTorch, buffer updates made by the copies (BatchNorm running
// statistics) are lost; only the direct path updates the module's buffers.
//
// The constructor moves the module to the first device and throws
// dtrain::Error when a requested device does not exist or the options
// disagree. forward throws what the module throws. Not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <torch/arg.h>
#include <torch/nn/parallel/data_parallel.h>

namespace dtrain::ddp {

struct DataParallelOptions {
  // The devices to replicate over, in order (the first holds the module).
  // A CUDA device may be listed more than once (one copy per entry); the
  // CPU only alone. Default: every visible CUDA device, else the CPU.
  TORCH_ARG(std::optional<std::vector<c10::Device>>, devices);
  // Or: the first `num_devices` CUDA devices; an error if fewer are visible.
  TORCH_ARG(std::optional<int64_t>, num_devices);
  // Where outputs are gathered. Default: the first device.
  TORCH_ARG(std::optional<c10::Device>, output_device);
  // The dimension the input is split along.
  TORCH_ARG(int64_t, dim) = 0;
};

// The devices DataParallel runs on for `options`, checked against
// `cuda_device_count` visible CUDA devices (a parameter so that the rules
// are testable without GPUs).
std::vector<c10::Device> data_parallel_devices(const DataParallelOptions& options,
                                               int64_t cuda_device_count);

// torch::cuda::device_count(): 0 without CUDA or without a GPU.
int64_t visible_cuda_devices();

template <typename ModuleType>
class DataParallel {
 public:
  explicit DataParallel(ModuleType module, DataParallelOptions options = {})
      : module_(std::move(module)),
        options_(std::move(options)),
        devices_(data_parallel_devices(options_, visible_cuda_devices())),
        output_device_(options_.output_device().value_or(devices_.front())) {
    module_->to(devices_.front());
  }

  // The module's output for `input` (any device), on output_device().
  at::Tensor forward(const at::Tensor& input) {
    if (devices_.size() == 1) {
      return module_->forward(input.to(devices_.front())).to(output_device_);
    }
    return torch::nn::parallel::data_parallel(module_, input, devices_, output_device_,
                                              options_.dim());
  }
  at::Tensor operator()(const at::Tensor& input) { return forward(input); }

  // The wrapped module: its parameters get the gradients and are what an
  // optimizer should update.
  ModuleType& module() { return module_; }
  const std::vector<c10::Device>& devices() const { return devices_; }
  c10::Device output_device() const { return output_device_; }

 private:
  ModuleType module_;
  DataParallelOptions options_;
  std::vector<c10::Device> devices_;
  c10::Device output_device_;
};

}  // namespace dtrain::ddp
