// Weights to and from PyTorch: a module's state dict (its parameters and
// buffers by name) in the file torch.save(model.state_dict()) writes, both
// ways.
//
//   save_state_dict(*model, "pointnet2.pt");
//   //   Python: model.load_state_dict(torch.load("pointnet2.pt"))
//   load_state_dict(*model, "from_python.pt");
//   //   Python: torch.save(model.state_dict(), "from_python.pt")
//
// Names are the module's own ("sa1.mlp0.0.weight"), so a PyTorch module
// whose attributes are named as the C++ module's submodules are takes the
// file as it is. Files are PyTorch's zip format; torch.load reads ours
// with weights_only=True, its default, and ours reads only what such a
// load allows (tensors, dicts, lists and plain values): a weights file can
// never run code. A dtrain checkpoint (checkpoint.h) is another format,
// LibTorch's archive, for resuming a run.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/arg.h>
#include <torch/nn/module.h>

namespace dtrain::train {

// Name -> tensor, in the order PyTorch's Module.state_dict() lists them:
// each module's own parameters, then its own buffers, then its children's
// in registration order.
using StateDict = std::vector<std::pair<std::string, at::Tensor>>;

// The module's parameters and buffers (no copies: the module's tensors).
StateDict state_dict(const torch::nn::Module& module);

// Writes `tensors` (as CPU copies) to `path` as torch.save would write an
// OrderedDict of them, atomically: a temporary file renamed over `path`.
// Throws dtrain::IOError naming the path when it cannot be written.
void save_state_dict(const StateDict& tensors, const std::string& path);
void save_state_dict(const torch::nn::Module& module, const std::string& path);

struct ReadStateDictOptions {
  // Where the tensors are in a file that holds more than a state dict: the
  // key of the dict that holds them ({"model": state_dict, "epoch": 3}:
  // "model"), dotted for a deeper one ("checkpoint.model"). Empty: the
  // file's top level is the state dict.
  TORCH_ARG(std::string, entry) = "";
};

// The tensors of a file torch.save or save_state_dict wrote, on the CPU,
// in the file's order. Throws dtrain::IOError naming the file: missing,
// cut short, of another format (a TorchScript archive, torch.save before
// PyTorch 1.6), holding a Python object other than plain data, or with no
// dict of tensors where `entry` says (the error lists the keys there).
StateDict read_state_dict(const std::string& path, const ReadStateDictOptions& options = {});

struct LoadStateDictOptions {
  TORCH_ARG(std::string, entry) = "";  // as ReadStateDictOptions::entry
  // Strict: every name of the module and of the file must match, each
  // with the same shape, or nothing is loaded. Not strict: load the names
  // whose shapes match, and report the rest (fine-tuning a model whose
  // head differs).
  TORCH_ARG(bool, strict) = true;
};

// What a load left out; empty after a strict load.
struct LoadStateDictReport {
  std::vector<std::string> missing;     // the module's names the file lacks
  std::vector<std::string> unexpected;  // the file's names the module lacks
  std::vector<std::string> mismatched;  // in both, of different shapes
  bool complete() const { return missing.empty() && unexpected.empty() && mismatched.empty(); }
};

// Copies the tensors of `path` into `module`'s parameters and buffers (to
// their device and dtype). A file whose every name starts with "module."
// (saved from a PyTorch DDP model) while the module's names do not is read
// without that prefix. Strict: throws dtrain::IOError, naming the file,
// the first name that does not match and how, before any tensor is
// copied. Throws dtrain::IOError as read_state_dict does.
LoadStateDictReport load_state_dict(torch::nn::Module& module, const std::string& path,
                                    const LoadStateDictOptions& options = {});

}  // namespace dtrain::train
