// Runs dtrain::amp::GradScaler over a scripted sequence of gradients and
// prints what happened as CSV, for test_grad_scaler_parity.py to replay with
// torch.amp.GradScaler and compare.
//
//   grad_scaler_trace <init_scale> <growth_interval> <steps> <grad_factor> <poison>
//
// poison: comma-separated "step:inf" / "step:nan" (or "-" for none): after
// backward on that step, p.grad[1] is set to inf/NaN. The problem (mirrored
// in the Python script): p = [1, 2, 3, 4], q = [0.5, -1.5] in one SGD
// optimizer (lr 0.01, momentum 0.9), two param groups;
//   loss_i = sum(p * w_i) + 0.5 * sum(q * q),  w_i = grad_factor * (i % 7 + 1) * [1, -0.5, 0.25, 2]
// On every third step the gradients are unscaled explicitly and clipped to
// norm 100 before step. Output columns: step, stepped, scale,
// growth_tracker, p0..p3, q0, q1.
#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/sgd.h>

#include <iostream>
#include <limits>
#include <map>
#include <sstream>
#include <string>

#include "dtrain/amp/grad_scaler.h"
#include "dtrain/util/process_setup.h"

int main(int argc, char** argv) {
  // dtrain's logging and crash traces; malloc keeps glibc's settings.
  dtrain::util::set_up_process(dtrain::util::ProcessSetup().retain_freed_host_memory(false));
  if (argc != 6) {
    std::cerr << "usage: grad_scaler_trace <init_scale> <growth_interval> <steps> <grad_factor> "
                 "<poison>\n";
    return 2;
  }
  const double init_scale = std::stod(argv[1]);
  const int64_t growth_interval = std::stoll(argv[2]);
  const int steps = std::stoi(argv[3]);
  const double grad_factor = std::stod(argv[4]);
  std::map<int, float> poison;
  std::istringstream spec(argv[5]);
  for (std::string item; std::getline(spec, item, ',');) {
    if (item == "-") {
      continue;
    }
    const auto colon = item.find(':');
    poison[std::stoi(item.substr(0, colon))] = item.substr(colon + 1) == "nan"
                                                   ? std::numeric_limits<float>::quiet_NaN()
                                                   : std::numeric_limits<float>::infinity();
  }

  at::Tensor p = at::tensor({1.0f, 2.0f, 3.0f, 4.0f}).set_requires_grad(true);
  at::Tensor q = at::tensor({0.5f, -1.5f}).set_requires_grad(true);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<at::Tensor>{p});
  groups.emplace_back(std::vector<at::Tensor>{q});
  torch::optim::SGD optimizer(groups, torch::optim::SGDOptions(0.01).momentum(0.9));
  dtrain::amp::GradScaler scaler(
      dtrain::amp::GradScalerOptions().init_scale(init_scale).growth_interval(growth_interval));
  const at::Tensor base = at::tensor({1.0f, -0.5f, 0.25f, 2.0f});

  std::cout << "step,stepped,scale,growth_tracker,p0,p1,p2,p3,q0,q1\n";
  for (int i = 0; i < steps; ++i) {
    optimizer.zero_grad();
    const at::Tensor w = base * static_cast<float>(grad_factor * (i % 7 + 1));
    const at::Tensor loss = (p * w).sum() + 0.5 * (q * q).sum();
    scaler.scale(loss).backward();
    if (auto it = poison.find(i); it != poison.end()) {
      at::NoGradGuard no_grad;
      p.mutable_grad()[1] = it->second;
    }
    if (i % 3 == 2) {
      scaler.unscale_(optimizer);
      torch::nn::utils::clip_grad_norm_(std::vector<at::Tensor>{p, q}, 100.0);
    }
    const bool stepped = scaler.step(optimizer);
    scaler.update();
    std::cout << fmt::format("{},{},{:.17g},{}", i, stepped ? 1 : 0, scaler.get_scale(),
                             scaler.growth_tracker());
    for (const auto& t : {p, q}) {
      for (int64_t j = 0; j < t.numel(); ++j) {
        std::cout << fmt::format(",{:.17g}", static_cast<double>(t[j].item<float>()));
      }
    }
    std::cout << "\n";
  }
  return 0;
}
