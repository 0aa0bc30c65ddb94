// Times batch norm (training) + ReLU, forward and backward, on channels-last
// CPU activations of the shapes PointNet++'s set abstractions make:
// LibTorch's batch_norm and relu_ (what torch::nn::BatchNorm2d + ReLU run)
// against dtrain::kernels::batch_norm_relu, in the same process, taking
// turns: each round one forward and backward of each, after --warmup
// untimed rounds. One CSV row per (shape, impl, timed round):
//
//   batch,channels,centres,neighbours,threads,dtype,impl,round,ms
//
// --dtype bfloat16 gives both bfloat16 activations beside float32
// parameters, as a CPU bf16 autocast convolution hands them to a module.
// Before timing, the two are checked to agree (output and every gradient).
//
//   bench_batch_norm_relu [--threads 2] [--steps 10] [--dtype bfloat16] [--csv out.csv]
//
// benchmarks/run_batch_norm_relu.sh runs it and reports the comparison.
#include <ATen/ATen.h>
#include <spdlog/spdlog.h>

#include <string>
#include <vector>

#include "dtrain/kernels/batch_norm_relu.h"
#include "dtrain/train/csv_writer.h"
#include "dtrain/util/cli_app.h"
#include "dtrain/util/errors.h"
#include "dtrain/util/process_setup.h"
#include "median_step.h"

namespace {

struct Options {
  int warmup = 2;
  int steps = 10;
  int threads = 1;
  std::string dtype = "float32";
  std::string csv = "out/bench_batch_norm_relu.csv";
};

// (B, C, M, K): the set abstractions' grouped activations, ssg at 8 x 1024
// points (both levels and their three widths), then ssg-lite at 16 x 512.
const std::vector<std::vector<int64_t>> kShapes = {
    {8, 64, 512, 32},  {8, 128, 512, 32}, {8, 128, 128, 64}, {8, 256, 128, 64},
    {8, 1024, 1, 128}, {16, 32, 128, 16}, {16, 64, 32, 32}};

struct Layer {
  at::Tensor weight, bias, running_mean, running_var;
};

Layer make_layer(int64_t channels) {
  Layer layer{at::rand({channels}) + 0.5, at::rand({channels}) - 0.5, at::zeros({channels}),
              at::ones({channels})};
  layer.weight.requires_grad_();
  layer.bias.requires_grad_();
  return layer;
}

at::Tensor separate(const at::Tensor& x, Layer& l) {
  at::Tensor y = at::batch_norm(x, l.weight, l.bias, l.running_mean, l.running_var,
                                /*training=*/true, 0.1, 1e-5, /*cudnn_enabled=*/true);
  return y.relu_();
}

at::Tensor fused(const at::Tensor& x, Layer& l) {
  return dtrain::kernels::batch_norm_relu(x, l.weight, l.bias, l.running_mean, l.running_var, 0.1,
                                          1e-5);
}

// Output, input gradient and parameter gradients of one pass with `grad`.
std::vector<at::Tensor> pass(at::Tensor (*op)(const at::Tensor&, Layer&), const at::Tensor& input,
                             Layer& layer, const at::Tensor& grad) {
  const at::Tensor x = input.detach().requires_grad_();
  layer.weight.mutable_grad() = at::Tensor();
  layer.bias.mutable_grad() = at::Tensor();
  const at::Tensor y = op(x, layer);
  y.backward(grad);
  return {y.detach(), x.grad(), layer.weight.grad(), layer.bias.grad()};
}

int run(const Options& o) {
  at::set_num_threads(o.threads);
  at::manual_seed(0);
  dtrain::train::CsvWriter csv(
      o.csv,
      {"batch", "channels", "centres", "neighbours", "threads", "dtype", "impl", "round", "ms"},
      dtrain::train::CsvWriter::Mode::kAppend);
  for (const auto& shape : kShapes) {
    const at::ScalarType dtype = o.dtype == "bfloat16" ? at::kBFloat16 : at::kFloat;
    const at::Tensor input =
        at::randn(shape).mul_(2).add_(0.3).to(dtype).contiguous(at::MemoryFormat::ChannelsLast);
    const at::Tensor grad = at::randn(shape).to(dtype).contiguous(at::MemoryFormat::ChannelsLast);
    Layer layer = make_layer(shape[1]);
    const auto expected = pass(separate, input, layer, grad);
    const auto got = pass(fused, input, layer, grad);
    // Compared in relative L1 norm: among millions of values a few lie so
    // near the ReLU's threshold that float rounding puts them on either side
    // in either implementation (each is then a whole gradient element off).
    // And LibTorch sums over the batch in float: against a float64 run, its
    // parameter gradients at (8, 64, 512, 32) are off by 1e-4 to 3e-4
    // (relative L1), the fused op's (sums of blocks in double) by 1e-5.
    const char* names[] = {"output", "input gradient", "weight gradient", "bias gradient"};
    for (size_t i = 0; i < expected.size(); ++i) {
      const at::Tensor want = expected[i].to(at::kDouble);
      const double diff =
          ((want - got[i].to(at::kDouble)).abs().sum() / want.abs().sum()).item<double>();
      DTRAIN_CHECK(diff <= 1e-3, "bench_batch_norm_relu: the fused op's ", names[i],
                   " differs from LibTorch's by ", diff, " (relative L1) for shape ",
                   at::IntArrayRef(shape));
    }
    // Turns: the two take alternate steps, so a slower spell hits both.
    std::vector<double> ms[2];
    for (int round = 0; round < o.warmup + o.steps; ++round) {
      for (int impl = 0; impl < 2; ++impl) {
        const double t = dtrain::bench::median_step_ms(
            0, 1, [&](int) { pass(impl == 0 ? separate : fused, input, layer, grad); });
        if (round >= o.warmup) {
          ms[impl].push_back(t);
        }
      }
    }
    const char* impls[2] = {"libtorch_batch_norm_relu", "dtrain_fused"};
    for (int impl = 0; impl < 2; ++impl) {
      for (size_t round = 0; round < ms[impl].size(); ++round) {
        csv.write_row({shape[0], shape[1], shape[2], shape[3], int64_t{o.threads}, o.dtype,
                       std::string(impls[impl]), static_cast<int64_t>(round), ms[impl][round]});
      }
    }
    const double medians[2] = {dtrain::bench::median_of(ms[0]), dtrain::bench::median_of(ms[1])};
    spdlog::info("({}, {}, {}, {}) channels-last {}: LibTorch {:.2f} ms, fused {:.2f} ms ({:.2f}x)",
                 shape[0], shape[1], shape[2], shape[3], o.dtype, medians[0], medians[1],
                 medians[0] / medians[1]);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  dtrain::util::set_up_process();
  CLI::App app{"batch norm + ReLU, forward and backward: LibTorch against the fused op",
               "bench_batch_norm_relu"};
  Options o;
  dtrain::bench::add_step_flags(app, o.warmup, o.steps, o.threads);
  app.add_option("--dtype", o.dtype, "the activations' dtype (parameters stay float32)")
      ->check(CLI::IsMember({"float32", "bfloat16"}))
      ->capture_default_str();
  app.add_option("--csv", o.csv, "report (rows appended)")->capture_default_str();
  return dtrain::util::run_cli_app(app, argc, argv, [&] { return run(o); });
}
