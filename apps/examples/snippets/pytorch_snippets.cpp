// The C++ of docs/pytorch.md, compiled with the project so the guide's code
// cannot drift from the API (lint.doc_samples checks the guide shows these
// lines). Run by tests/python/test_state_dicts.py's probe and the apps'
// --init-weights and --export-weights, which make the same calls.
#include <torch/torch.h>

#include "dtrain/models/pointnet2_cls.h"  // link dtrain::models
#include "dtrain/train/state_dict.h"      // link dtrain::sdk

namespace snippets {

namespace models = dtrain::models;
namespace train = dtrain::train;

void to_pytorch(models::PointNet2Cls& model) {
  train::save_state_dict(*model, "pointnet2.pt");  // torch.load("pointnet2.pt") in Python
}

void from_pytorch() {
  models::PointNet2Cls model(models::pointnet2_cls_preset("ssg", 40));
  train::load_state_dict(*model, "from_python.pt");  // torch.save(model.state_dict(), ...)
  model->eval();
}

void fine_tune_from_pytorch() {
  models::PointNet2Cls model(models::pointnet2_cls_preset("ssg", 10));  // a 10-class head
  auto report = train::load_state_dict(
      *model, "checkpoint.pth",
      train::LoadStateDictOptions().entry("model").strict(false));  // {"model": ..., "epoch": ...}
  // report.mismatched: {"head.8.weight", "head.8.bias"}, left at their initial values
}

void read_any_state_dict() {
  for (const auto& [name, tensor] : train::read_state_dict("from_python.pt")) {
    std::printf("%s %s\n", name.c_str(), c10::str(tensor.sizes()).c_str());
  }
}

}  // namespace snippets
