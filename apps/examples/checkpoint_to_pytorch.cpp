// Weights for PyTorch from a train_pointnet2 checkpoint: the model its notes
// describe, its weights, written as torch.save(model.state_dict()) writes.
// Run: checkpoint_to_pytorch out/model.pt pointnet2.pt
#include <cstdio>

#include "dtrain/models/pointnet2_classifier.h"
#include "dtrain/train/state_dict.h"
#include "dtrain/util/errors.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s CHECKPOINT STATE_DICT\n", argv[0]);
    return 2;
  }
  try {
    auto classifier = dtrain::models::PointNet2Classifier::load(argv[1], torch::kCPU);
    dtrain::train::save_state_dict(*classifier.model(), argv[2]);
    const auto& model = classifier.description();
    // The twin (models/torch_twins) names its layers as the C++ model does.
    std::printf(
        "in Python:\n"
        "  from torch_twins.pointnet2 import PointNet2Cls\n"
        "  model = PointNet2Cls(\"%s\", %zu, in_channels=%d)\n"
        "  model.load_state_dict(torch.load(\"%s\"))\n",
        model.preset.c_str(), model.class_names.size(), model.normals ? 3 : 0, argv[2]);
  } catch (const dtrain::Error& e) {  // a bad checkpoint or path, named in one line
    std::fprintf(stderr, "checkpoint_to_pytorch: %s\n", e.what());
    return 1;
  }
}
