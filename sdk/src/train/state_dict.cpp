#include "dtrain/train/state_dict.h"

#include <map>
#include <sstream>

#include <ATen/ATen.h>
#include <c10/util/StringUtil.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/nn/module.h>

#include "atomic_write.h"
#include "dtrain/util/errors.h"
#include "torch_save_format.h"

namespace dtrain::train {

namespace {

void collect(const torch::nn::Module& module, const std::string& prefix, StateDict& tensors) {
  for (const auto& parameter : module.named_parameters(/*recurse=*/false)) {
    if (parameter.value().defined()) {
      tensors.emplace_back(prefix + parameter.key(), parameter.value());
    }
  }
  for (const auto& buffer : module.named_buffers(/*recurse=*/false)) {
    if (buffer.value().defined()) {
      tensors.emplace_back(prefix + buffer.key(), buffer.value());
    }
  }
  for (const auto& child : module.named_children()) {
    collect(*child.value(), prefix + child.key() + ".", tensors);
  }
}

[[noreturn]] void refuse(const std::string& path, const std::string& why) {
  throw IOError(fmt::format("cannot read state dict '{}': {}", path, why));
}

// "epoch, state_dict, optimizer": a dict's keys, for an error line.
std::string key_list(const c10::impl::GenericDict& dict) {
  std::vector<std::string> keys;
  for (const auto& item : dict) {
    keys.push_back(item.key().isString() ? item.key().toStringRef() : c10::str(item.key()));
  }
  return c10::Join(", ", keys);
}

// The dict `entry` names under `root` ("a.b": root["a"]["b"]).
c10::IValue find_entry(c10::IValue root, const std::string& entry, const std::string& path) {
  if (entry.empty()) {
    return root;
  }
  std::istringstream parts(entry);
  std::string reached;
  for (std::string key; std::getline(parts, key, '.');) {
    if (!root.isGenericDict()) {
      refuse(path, fmt::format("entry '{}' is not in a dict", reached + key));
    }
    const c10::impl::GenericDict dict = root.toGenericDict();
    const auto found = dict.find(c10::IValue(key));
    if (found == dict.end()) {
      refuse(path, fmt::format("it has no entry '{}'{}; its keys there: {}", key,
                               reached.empty() ? "" : " in '" + reached + "'", key_list(dict)));
    }
    root = found->value();
    reached += key + ".";
  }
  return root;
}

StateDict as_state_dict(const c10::IValue& object, const std::string& path,
                        const std::string& entry) {
  const std::string where = entry.empty() ? "it" : "entry '" + entry + "'";
  if (!object.isGenericDict()) {
    refuse(path, fmt::format("{} holds a {}, not tensors by name", where, object.tagKind()));
  }
  const c10::impl::GenericDict dict = object.toGenericDict();
  StateDict tensors;
  for (const auto& item : dict) {
    if (!item.key().isString() || !item.value().isTensor()) {
      refuse(path, fmt::format("{} holds a dict of {} entries ({}) that are not all tensors by "
                               "name; name the entry that holds the state dict",
                               where, dict.size(), key_list(dict)));
    }
    tensors.emplace_back(item.key().toStringRef(), item.value().toTensor());
  }
  return tensors;
}

// A PyTorch DDP model's names ("module.sa1...") without the wrapper's prefix,
// where the module has no such prefix of its own.
void drop_ddp_prefix(StateDict& tensors, const StateDict& module_tensors, const std::string& path) {
  const std::string prefix = "module.";
  auto prefixed = [&prefix](const auto& item) { return item.first.starts_with(prefix); };
  if (tensors.empty() || !std::all_of(tensors.begin(), tensors.end(), prefixed) ||
      std::any_of(module_tensors.begin(), module_tensors.end(), prefixed)) {
    return;
  }
  for (auto& item : tensors) {
    item.first.erase(0, prefix.size());
  }
  spdlog::info("{}: names read without the 'module.' of a DDP-wrapped model", path);
}

// Name -> tensor, to look names up.
using ByName = std::map<std::string, const at::Tensor*>;
ByName by_name(const StateDict& tensors) {
  ByName index;
  for (const auto& [name, tensor] : tensors) {
    index.emplace(name, &tensor);
  }
  return index;
}

LoadStateDictReport compare(const StateDict& file, const ByName& in_file, const StateDict& module) {
  LoadStateDictReport report;
  for (const auto& [name, tensor] : module) {
    const auto found = in_file.find(name);
    if (found == in_file.end()) {
      report.missing.push_back(name);
    } else if (found->second->sizes() != tensor.sizes()) {
      report.mismatched.push_back(name);
    }
  }
  const ByName in_module = by_name(module);
  for (const auto& item : file) {
    if (!in_module.contains(item.first)) {
      report.unexpected.push_back(item.first);
    }
  }
  return report;
}

// "'head.8.weight' has shape [10, 128] in the file, [40, 128] in the model":
// the first thing a strict load refuses.
std::string first_problem(const LoadStateDictReport& report, const StateDict& file,
                          const StateDict& module) {
  auto more = [](const std::vector<std::string>& names) {
    return names.size() > 1 ? fmt::format(" (and {} more)", names.size() - 1) : std::string();
  };
  auto shape_in = [](const StateDict& tensors, const std::string& name) {
    for (const auto& item : tensors) {
      if (item.first == name) {
        return c10::str(item.second.sizes());
      }
    }
    return std::string("nothing");
  };
  if (!report.mismatched.empty()) {
    const std::string& name = report.mismatched.front();
    return fmt::format("'{}' has shape {} in the file, {} in the model{}", name,
                       shape_in(file, name), shape_in(module, name), more(report.mismatched));
  }
  if (!report.missing.empty()) {
    return fmt::format("the model's '{}' is not in the file{}", report.missing.front(),
                       more(report.missing));
  }
  return fmt::format("the file's '{}' is not in the model{}", report.unexpected.front(),
                     more(report.unexpected));
}

}  // namespace

StateDict state_dict(const torch::nn::Module& module) {
  StateDict tensors;
  collect(module, "", tensors);
  return tensors;
}

void save_state_dict(const StateDict& tensors, const std::string& path) {
  std::string bytes;
  try {
    bytes = detail::torch_save_bytes(tensors);
  } catch (const Error& e) {
    throw IOError(fmt::format("cannot write state dict '{}': {}", path, e.what()));
  } catch (const c10::Error& e) {
    throw IOError(
        fmt::format("cannot write state dict '{}': {}", path, e.what_without_backtrace()));
  }
  detail::write_atomically(path, bytes, "state dict");
}

void save_state_dict(const torch::nn::Module& module, const std::string& path) {
  save_state_dict(state_dict(module), path);
}

StateDict read_state_dict(const std::string& path, const ReadStateDictOptions& options) {
  return as_state_dict(find_entry(detail::torch_load_file(path), options.entry(), path), path,
                       options.entry());
}

LoadStateDictReport load_state_dict(torch::nn::Module& module, const std::string& path,
                                    const LoadStateDictOptions& options) {
  StateDict file = read_state_dict(path, ReadStateDictOptions().entry(options.entry()));
  const StateDict targets = state_dict(module);
  drop_ddp_prefix(file, targets, path);
  const ByName sources = by_name(file);
  const LoadStateDictReport report = compare(file, sources, targets);
  DTRAIN_CHECK_AS(IOError, !options.strict() || report.complete(), "state dict '", path,
                  "' does not fit the model: ", first_problem(report, file, targets));
  at::NoGradGuard no_grad;
  for (const auto& [name, target] : targets) {
    const auto found = sources.find(name);
    if (found != sources.end() && found->second->sizes() == target.sizes()) {
      at::Tensor(target).copy_(*found->second);
    }
  }
  if (!report.complete()) {
    spdlog::warn(
        "{}: loaded what fits the model; left out {} of the model's names missing from "
        "the file, {} of the file's not in the model and {} of other shapes",
        path, report.missing.size(), report.unexpected.size(), report.mismatched.size());
  }
  return report;
}

}  // namespace dtrain::train
