// Runs one of the apps' models on an input and writes its output, with
// weights it saves (made here) or loads (made elsewhere), all through
// dtrain::train's state dict files, for test_state_dicts.py to compare
// with the models' PyTorch twins (models/torch_twins).
//
//   state_dict_probe MODEL --save WEIGHTS INPUT OUTPUT   random weights, saved
//   state_dict_probe MODEL --load WEIGHTS INPUT OUTPUT [ENTRY]   the weights of a file
//
// MODEL: ssg, msg, ssg-lite (PointNet2Cls, 10 classes), partseg-ssg,
// partseg-ssg-lite (PointNet2PartSeg, 6 parts, 3 categories), toycnn
// (ToyCnn, 3 channels, 10 classes). INPUT is a state dict file holding
// "input" (points or images) and, for part segmentation, "categories";
// OUTPUT gets "output", the model's forward in evaluation mode. Saved
// weights have random batch norm statistics too, so evaluation uses them.
// ENTRY: the key of the dict in WEIGHTS that holds the state dict. An
// error (a file that does not fit) is printed as one line, exit 1.
#include <ATen/ATen.h>

#include <cstdio>
#include <functional>
#include <map>
#include <string>

#include "dtrain/models/pointnet2_cls.h"
#include "dtrain/models/pointnet2_part_seg.h"
#include "dtrain/models/toy_cnn.h"
#include "dtrain/train/state_dict.h"
#include "dtrain/util/process_setup.h"

namespace {

namespace models = dtrain::models;
namespace train = dtrain::train;

// A model and its forward on the input file's tensors.
struct Probe {
  std::shared_ptr<torch::nn::Module> module;
  std::function<at::Tensor(const std::map<std::string, at::Tensor>&)> forward;
};

Probe make(const std::string& name) {
  if (name == "toycnn") {
    models::ToyCnn net(models::ToyCnnOptions().in_channels(3).num_classes(10));
    return {net.ptr(), [net](const auto& in) mutable { return net(in.at("input")); }};
  }
  if (name.starts_with("partseg-")) {
    models::PointNet2PartSeg net(models::pointnet2_part_seg_preset(name.substr(8), 6, 3));
    return {net.ptr(),
            [net](const auto& in) mutable { return net(in.at("input"), in.at("categories")); }};
  }
  models::PointNet2Cls net(models::pointnet2_cls_preset(name, 10));
  return {net.ptr(), [net](const auto& in) mutable { return net(in.at("input")); }};
}

// Batch norm statistics away from their initial 0 and 1.
void randomize_statistics(torch::nn::Module& module) {
  at::NoGradGuard no_grad;
  for (auto& buffer : module.named_buffers()) {
    at::Tensor value = buffer.value();
    if (buffer.key().ends_with("running_mean")) {
      value.normal_(0, 0.2);
    } else if (buffer.key().ends_with("running_var")) {
      value.uniform_(0.5, 1.5);
    } else if (buffer.key().ends_with("num_batches_tracked")) {
      value.fill_(7);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  dtrain::util::set_up_process(dtrain::util::ProcessSetup().retain_freed_host_memory(false));
  if (argc < 6 || argc > 7 ||
      (std::string(argv[2]) != "--save" && std::string(argv[2]) != "--load")) {
    std::fprintf(stderr,
                 "usage: state_dict_probe MODEL --save|--load WEIGHTS INPUT OUTPUT [ENTRY]\n");
    return 2;
  }
  const bool save = std::string(argv[2]) == "--save";
  try {
    torch::manual_seed(save ? 1 : 2);  // a load starts from other weights
    Probe probe = make(argv[1]);
    if (save) {
      randomize_statistics(*probe.module);
      train::save_state_dict(*probe.module, argv[3]);
    } else {
      train::load_state_dict(*probe.module, argv[3],
                             train::LoadStateDictOptions().entry(argc == 7 ? argv[6] : ""));
    }
    std::map<std::string, at::Tensor> input;
    for (auto& [name, tensor] : train::read_state_dict(argv[4])) {
      input.emplace(name, tensor);
    }
    probe.module->eval();
    at::NoGradGuard no_grad;
    train::save_state_dict({{"output", probe.forward(input)}}, argv[5]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
