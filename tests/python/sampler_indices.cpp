// Prints dtrain::data::DistributedSampler's index lists for the cases read
// from stdin, one per line: "size replicas rank seed epoch shuffle drop_last"
// (shuffle and drop_last as 0/1). Answers one line per case:
// "ok <num_samples> <total_size> <indices...>" or "error <message>".
// test_distributed_sampler.py compares these lines with PyTorch's sampler.
#include <cstdint>
#include <iostream>
#include <sstream>
#include <string>

#include "dtrain/data/distributed_sampler.h"
#include "dtrain/util/errors.h"
#include "dtrain/util/process_setup.h"

int main() {
  // dtrain's logging and crash traces; malloc keeps glibc's settings.
  dtrain::util::set_up_process(dtrain::util::ProcessSetup().retain_freed_host_memory(false));
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    int64_t size = 0, replicas = 0, rank = 0, seed = 0, epoch = 0;
    int shuffle = 0, drop_last = 0;
    if (!(in >> size >> replicas >> rank >> seed >> epoch >> shuffle >> drop_last)) {
      std::cerr << "malformed case: " << line << "\n";
      return 2;
    }
    try {
      dtrain::data::DistributedSampler sampler(
          size, dtrain::data::DistributedSamplerOptions(replicas, rank)
                    .seed(seed)
                    .shuffle(shuffle != 0)
                    .drop_last(drop_last != 0));
      sampler.set_epoch(epoch);
      std::cout << "ok " << sampler.num_samples() << " " << sampler.total_size();
      for (int64_t index : sampler.indices()) {
        std::cout << " " << index;
      }
      std::cout << "\n";
    } catch (const dtrain::Error& error) {
      std::cout << "error " << error.what() << "\n";
    }
  }
  return 0;
}
