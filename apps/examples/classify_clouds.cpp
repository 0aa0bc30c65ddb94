// Research code classifying point clouds with a train_pointnet2 checkpoint:
// each file's most probable class and the two after it.
// Run: classify_clouds out/model.pt chair.ply table.txt
#include <cstdio>

#include "dtrain/datasets/point_cloud_file.h"
#include "dtrain/models/pointnet2_classifier.h"
#include "dtrain/util/errors.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s CHECKPOINT CLOUD...\n", argv[0]);
    return 2;
  }
  try {
    // The model its notes describe, its weights, on the CPU (or torch::kCUDA).
    auto classifier = dtrain::models::PointNet2Classifier::load(argv[1], torch::kCPU);
    for (int i = 2; i < argc; ++i) {
      const at::Tensor cloud = dtrain::datasets::read_point_cloud_file(argv[i]);  // (P, 3 or 6)
      std::printf("%s:", argv[i]);
      for (const auto& guess : classifier.classify(cloud, /*top_k=*/3)) {
        std::printf(" %s %.3f", guess.name.c_str(), guess.probability);
      }
      std::printf("\n");
    }
  } catch (const dtrain::Error& e) {  // a bad file or checkpoint, named in one line
    std::fprintf(stderr, "classify_clouds: %s\n", e.what());
    return 1;
  }
}
