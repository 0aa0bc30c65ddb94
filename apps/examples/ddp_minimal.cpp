// The smallest DDP program: each process fits y = sum(x) on its own data, the
// gradients averaged over all. Run: dtrun --standalone --nproc-per-node 2 ddp_minimal
#include <torch/torch.h>

#include <cstdio>

#include "dtrain/ddp/distributed_data_parallel.h"
#include "dtrain/dist/init.h"
#include "dtrain/util/process_setup.h"

int main() {
  dtrain::util::set_up_process();  // log lines name the rank; crash traces
  namespace dist = dtrain::dist;
  dist::init_process_group();            // rank and world from dtrun, torchrun, mpirun or srun
  torch::manual_seed(dist::get_rank());  // each process draws its own data
  torch::nn::Linear model(16, 1);
  dtrain::ddp::DistributedDataParallel<torch::nn::Linear> ddp(model);  // rank 0's weights
  torch::optim::SGD optimizer(model->parameters(), 0.05);
  for (int step = 0; step <= 100; ++step) {
    const torch::Tensor x = torch::randn({32, 16});
    const torch::Tensor loss = (ddp(x) - x.sum(1, /*keepdim=*/true)).pow(2).mean();
    optimizer.zero_grad();
    loss.backward();  // gradients all-reduced in buckets, overlapping backward
    optimizer.step();
    if (dist::get_rank() == 0 && step % 25 == 0) {
      std::printf("step %d: loss %.4f\n", step, loss.item<double>());
    }
  }
  dist::destroy_process_group();
}
