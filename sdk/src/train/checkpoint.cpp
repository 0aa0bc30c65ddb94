#include "dtrain/train/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <filesystem>
#include <map>
#include <memory>
#include <system_error>
#include <typeinfo>
#include <utility>
#include <vector>

#include <c10/util/StringUtil.h>
#include <c10/util/Type.h>
#include <spdlog/spdlog.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include "atomic_write.h"
#include "dtrain/util/errors.h"

namespace dtrain::train {

namespace fs = std::filesystem;

namespace {

constexpr const char* kModelKey = "model";
constexpr const char* kOptimizerKey = "optimizer";
constexpr const char* kEpochsKey = "epochs_done";
constexpr const char* kScalerKey = "grad_scaler";
constexpr const char* kOptimizerTypeKey = "optimizer_type";
constexpr const char* kStepsKey = "steps_done";
constexpr const char* kExtraKey = "extra";
constexpr const char* kNotesKey = "notes";

// The optimizer's class, as the checkpoint records it: LibTorch's
// Optimizer::load fails with an internal assertion when the state is of
// another optimizer (Adam's into SGD).
std::string optimizer_type(const torch::optim::Optimizer& optimizer) {
  return c10::demangle(typeid(optimizer).name());
}

// Name -> shape of every parameter and buffer. LibTorch's Module::load
// replaces a tensor with whatever the archive holds under its name, so a
// checkpoint of a wider model would load silently; comparing the shapes
// before and after catches it.
std::map<std::string, std::vector<int64_t>> tensor_shapes(const torch::nn::Module& module) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& item : module.named_parameters()) {
    shapes[item.key()] = item.value().sizes().vec();
  }
  for (const auto& item : module.named_buffers()) {
    shapes[item.key()] = item.value().sizes().vec();
  }
  return shapes;
}

void check_same_shapes(const std::map<std::string, std::vector<int64_t>>& expected,
                       const torch::nn::Module& module, const std::string& path) {
  for (const auto& [name, shape] : tensor_shapes(module)) {
    const auto it = expected.find(name);
    DTRAIN_CHECK_AS(
        IOError, it != expected.end() && it->second == shape, "checkpoint '", path,
        "' does not fit the model: '", name, "' has shape ", c10::IntArrayRef(shape),
        " in the checkpoint, ",
        it == expected.end() ? std::string("nothing") : c10::str(c10::IntArrayRef(it->second)),
        " in the model");
  }
}

// The names in `archive` that `module` has no parameter, buffer or child
// for, as dotted paths under `prefix`: Module::load reads only the names
// the module asks for, so a checkpoint of a larger model would otherwise
// load without a word.
void find_unexpected(torch::serialize::InputArchive& archive, const torch::nn::Module& module,
                     const std::string& prefix, std::vector<std::string>& unexpected) {
  const auto parameters = module.named_parameters(/*recurse=*/false);
  const auto buffers = module.named_buffers(/*recurse=*/false);
  const auto children = module.named_children();
  for (const std::string& key : archive.keys()) {
    if (parameters.contains(key) || buffers.contains(key)) {
      continue;
    }
    torch::serialize::InputArchive child;
    if (children.contains(key) && archive.try_read(key, child)) {
      find_unexpected(child, *children[key], prefix + key + ".", unexpected);
      continue;
    }
    unexpected.push_back(prefix + key);
  }
}

// The names `module` has (parameters, buffers, children) that `archive`
// lacks, as dotted paths under `prefix`: Module::load would stop at the
// first with LibTorch's "No such serialized submodule" or tensor message.
void find_missing(torch::serialize::InputArchive& archive, const torch::nn::Module& module,
                  const std::string& prefix, std::vector<std::string>& missing) {
  const std::vector<std::string> present = archive.keys();
  auto has = [&](const std::string& key) {
    return std::find(present.begin(), present.end(), key) != present.end();
  };
  for (const auto& item : module.named_parameters(/*recurse=*/false)) {
    if (!has(item.key())) {
      missing.push_back(prefix + item.key());
    }
  }
  for (const auto& item : module.named_buffers(/*recurse=*/false)) {
    if (!has(item.key())) {
      missing.push_back(prefix + item.key());
    }
  }
  for (const auto& child : module.named_children()) {
    torch::serialize::InputArchive child_archive;
    if (!has(child.key()) || !archive.try_read(child.key(), child_archive)) {
      missing.push_back(prefix + child.key());
      continue;
    }
    find_missing(child_archive, *child.value(), prefix + child.key() + ".", missing);
  }
}

}  // namespace

void save_checkpoint(const std::string& path, const torch::nn::Module& module,
                     const torch::optim::Optimizer& optimizer, int64_t epochs_done,
                     const amp::GradScaler* scaler) {
  save_checkpoint(path, module, optimizer, TrainingProgress{.epochs_done = epochs_done}, scaler);
}

namespace {

// The whole checkpoint as the bytes of LibTorch's archive: taken at once,
// so what a later step changes is not in it.
std::string serialize_checkpoint(const std::string& path, const torch::nn::Module& module,
                                 const torch::optim::Optimizer& optimizer,
                                 const TrainingProgress& progress, const amp::GradScaler* scaler) {
  DTRAIN_CHECK(progress.epochs_done >= 0, "save_checkpoint: epochs_done is ", progress.epochs_done,
               "; expected 0 or more");
  DTRAIN_CHECK(progress.steps_done >= 0, "save_checkpoint: steps_done is ", progress.steps_done,
               "; expected 0 or more");
  for (const auto& [name, value] : progress.extra) {
    DTRAIN_CHECK(!name.empty() && value.defined(), "save_checkpoint: extra value '", name, "' ",
                 name.empty() ? "has an empty name" : "holds no tensor");
  }
  for (const auto& note : progress.notes) {
    DTRAIN_CHECK(!note.first.empty(), "save_checkpoint: a note has an empty name");
  }
  try {
    torch::serialize::OutputArchive archive;
    torch::serialize::OutputArchive model_archive;
    module.save(model_archive);
    archive.write(kModelKey, model_archive);
    torch::serialize::OutputArchive optimizer_archive;
    optimizer.save(optimizer_archive);
    archive.write(kOptimizerKey, optimizer_archive);
    archive.write(kOptimizerTypeKey, c10::IValue(optimizer_type(optimizer)));
    archive.write(kEpochsKey, c10::IValue(progress.epochs_done));
    archive.write(kStepsKey, c10::IValue(progress.steps_done));
    torch::serialize::OutputArchive extra_archive;
    for (const auto& [name, value] : progress.extra) {
      extra_archive.write(name, value.cpu(), /*is_buffer=*/true);
    }
    archive.write(kExtraKey, extra_archive);
    torch::serialize::OutputArchive notes_archive;
    for (const auto& [name, text] : progress.notes) {
      notes_archive.write(name, c10::IValue(text));
    }
    archive.write(kNotesKey, notes_archive);
    if (scaler != nullptr && scaler->is_enabled()) {
      torch::serialize::OutputArchive scaler_archive;
      scaler->save(scaler_archive);
      archive.write(kScalerKey, scaler_archive);
    }
    std::string bytes;
    archive.save_to([&bytes](const void* data, size_t size) {
      bytes.append(static_cast<const char*>(data), size);
      return size;
    });
    return bytes;
  } catch (const c10::Error& e) {
    throw IOError(dtrain::detail::concat("cannot write checkpoint '", path,
                                         "': ", e.what_without_backtrace()));
  }
}

}  // namespace

void save_checkpoint(const std::string& path, const torch::nn::Module& module,
                     const torch::optim::Optimizer& optimizer, const TrainingProgress& progress,
                     const amp::GradScaler* scaler) {
  detail::write_atomically(path, serialize_checkpoint(path, module, optimizer, progress, scaler),
                           "checkpoint");
}

CheckpointWriter::~CheckpointWriter() {
  if (writing_.joinable()) {
    writing_.join();
  }
  if (failure_) {
    try {
      std::rethrow_exception(failure_);
    } catch (const std::exception& e) {
      spdlog::error("{}", e.what());
    }
  }
}

void CheckpointWriter::save(const std::string& path, const torch::nn::Module& module,
                            const torch::optim::Optimizer& optimizer,
                            const TrainingProgress& progress, const amp::GradScaler* scaler) {
  wait();
  auto bytes = std::make_shared<const std::string>(
      serialize_checkpoint(path, module, optimizer, progress, scaler));
  writing_ = std::thread([this, path, bytes] {
    try {
      detail::write_atomically(path, *bytes, "checkpoint");
    } catch (...) {
      failure_ = std::current_exception();
    }
  });
}

void CheckpointWriter::wait() {
  if (writing_.joinable()) {
    writing_.join();
  }
  if (failure_) {
    std::exception_ptr failure = std::exchange(failure_, nullptr);
    std::rethrow_exception(failure);
  }
}

void check_checkpoint_path(const std::string& path) {
  detail::check_writable(path, "checkpoint");
}

std::optional<int64_t> load_checkpoint(const std::string& path, torch::nn::Module& module,
                                       torch::optim::Optimizer& optimizer,
                                       amp::GradScaler* scaler) {
  const auto progress = load_checkpoint_progress(path, module, optimizer, scaler);
  return progress ? std::optional<int64_t>(progress->epochs_done) : std::nullopt;
}

namespace {

// Whether a checkpoint is at `path`: false when nothing is there. Throws
// dtrain::IOError when it cannot be looked at, or is a directory.
bool checkpoint_present(const std::string& path) {
  std::error_code ec;
  const bool present = fs::exists(path, ec);
  // Only a file that is not there means "no checkpoint yet": one that
  // cannot be looked at (no permission, a symlink loop, an I/O error) must
  // not start training from scratch and then overwrite it.
  DTRAIN_CHECK_AS(IOError, !ec, "cannot look for checkpoint '", path, "': ", ec.message());
  if (present) {
    DTRAIN_CHECK_AS(IOError, !fs::is_directory(path, ec), "checkpoint '", path,
                    "' is a directory, not a checkpoint file");
  }
  return present;
}

// Onto the module's device, wherever the checkpoint was written: a run
// on GPUs resumes from a CPU run's file and the other way round, and the
// optimizer's state lands beside the parameters it updates.
c10::Device module_device(const torch::nn::Module& module) {
  const auto parameters = module.parameters();
  return parameters.empty() ? c10::Device(c10::kCPU) : parameters[0].device();
}

// The model's state from the checkpoint's archive into `module`, refused
// (naming what differs) unless it fits exactly.
void load_model_state(torch::serialize::InputArchive& archive, torch::nn::Module& module,
                      const std::string& path) {
  torch::serialize::InputArchive model_archive;
  DTRAIN_CHECK_AS(IOError, archive.try_read(kModelKey, model_archive), "checkpoint '", path,
                  "' holds no model state");
  std::vector<std::string> missing;
  find_missing(model_archive, module, "", missing);
  DTRAIN_CHECK_AS(IOError, missing.empty(), "checkpoint '", path,
                  "' does not fit the model: it lacks what the model has: '",
                  c10::Join("', '", missing), "'");
  std::vector<std::string> unexpected;
  find_unexpected(model_archive, module, "", unexpected);
  DTRAIN_CHECK_AS(IOError, unexpected.empty(), "checkpoint '", path,
                  "' does not fit the model: it holds what the model does not have: '",
                  c10::Join("', '", unexpected), "'");
  const auto shapes = tensor_shapes(module);
  module.load(model_archive);
  check_same_shapes(shapes, module, path);
}

void load_optimizer_state(torch::serialize::InputArchive& archive,
                          torch::optim::Optimizer& optimizer, const std::string& path) {
  c10::IValue saved_type;
  if (archive.try_read(kOptimizerTypeKey, saved_type) && saved_type.isString()) {
    DTRAIN_CHECK_AS(IOError, saved_type.toStringRef() == optimizer_type(optimizer), "checkpoint '",
                    path, "' holds the state of a ", saved_type.toStringRef(),
                    " optimizer; this run's optimizer is a ", optimizer_type(optimizer));
  }
  torch::serialize::InputArchive optimizer_archive;
  DTRAIN_CHECK_AS(IOError, archive.try_read(kOptimizerKey, optimizer_archive), "checkpoint '", path,
                  "' holds no optimizer state");
  optimizer.load(optimizer_archive);
}

// How far the run had got, its extra values and its notes.
TrainingProgress read_progress(torch::serialize::InputArchive& archive, const std::string& path) {
  c10::IValue epochs;
  DTRAIN_CHECK_AS(IOError, archive.try_read(kEpochsKey, epochs) && epochs.isInt(), "checkpoint '",
                  path, "' holds no epoch count");
  TrainingProgress progress{.epochs_done = epochs.toInt()};
  c10::IValue steps;
  if (archive.try_read(kStepsKey, steps)) {
    DTRAIN_CHECK_AS(IOError, steps.isInt() && steps.toInt() >= 0, "checkpoint '", path,
                    "' holds a step count that is not a count: ", steps);
    progress.steps_done = steps.toInt();
  }
  torch::serialize::InputArchive extra_archive;
  if (archive.try_read(kExtraKey, extra_archive)) {
    for (const std::string& name : extra_archive.keys()) {
      at::Tensor value;
      extra_archive.read(name, value, /*is_buffer=*/true);
      progress.extra[name] = value.cpu();
    }
  }
  torch::serialize::InputArchive notes_archive;
  if (archive.try_read(kNotesKey, notes_archive)) {
    for (const std::string& name : notes_archive.keys()) {
      c10::IValue note;
      notes_archive.read(name, note);
      DTRAIN_CHECK_AS(IOError, note.isString(), "checkpoint '", path, "': note '", name,
                      "' is not text");
      progress.notes[name] = note.toStringRef();
    }
  }
  return progress;
}

[[noreturn]] void rethrow_as_load_error(const std::string& path, const c10::Error& e) {
  throw IOError(
      dtrain::detail::concat("cannot load checkpoint '", path, "': ", e.what_without_backtrace()));
}

}  // namespace

std::optional<TrainingProgress> load_checkpoint_progress(const std::string& path,
                                                         torch::nn::Module& module,
                                                         torch::optim::Optimizer& optimizer,
                                                         amp::GradScaler* scaler) {
  if (!checkpoint_present(path)) {
    return std::nullopt;
  }
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path, module_device(module));
    load_model_state(archive, module, path);
    load_optimizer_state(archive, optimizer, path);
    torch::serialize::InputArchive scaler_archive;
    if (scaler != nullptr && archive.try_read(kScalerKey, scaler_archive)) {
      scaler->load(scaler_archive);
    }
    return read_progress(archive, path);
  } catch (const c10::Error& e) {
    rethrow_as_load_error(path, e);
  }
}

TrainingProgress read_checkpoint_progress(const std::string& path) {
  DTRAIN_CHECK_AS(IOError, checkpoint_present(path), "checkpoint '", path, "' does not exist");
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path, c10::Device(c10::kCPU));
    return read_progress(archive, path);
  } catch (const c10::Error& e) {
    rethrow_as_load_error(path, e);
  }
}

TrainingProgress load_model_checkpoint(const std::string& path, torch::nn::Module& module) {
  DTRAIN_CHECK_AS(IOError, checkpoint_present(path), "checkpoint '", path, "' does not exist");
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path, module_device(module));
    load_model_state(archive, module, path);
    return read_progress(archive, path);
  } catch (const c10::Error& e) {
    rethrow_as_load_error(path, e);
  }
}

}  // namespace dtrain::train
