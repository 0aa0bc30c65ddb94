// torch_load_file (torch_save_format.h): the zip archive torch.save
// writes, read with LibTorch's reader; its pickle by unpickle_weights.
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include <ATen/ATen.h>
#include <caffe2/serialize/inline_container.h>
#include <fmt/format.h>

#include "dtrain/util/errors.h"
#include "pickle_reader.h"
#include "torch_save_format.h"

namespace dtrain::train::detail {

namespace {

// The flat CPU tensors of a zip's storages, each read once.
class Storages {
 public:
  explicit Storages(caffe2::serialize::PyTorchStreamReader& zip) : zip_(zip) {}

  at::Tensor load(const std::string& key, at::ScalarType dtype, int64_t elements) {
    if (const auto loaded = loaded_.find(key); loaded != loaded_.end()) {
      return loaded->second;
    }
    const std::string record = "data/" + key;
    DTRAIN_CHECK_AS(IOError, zip_.hasRecord(record), "storage ", record, " is missing");
    at::Tensor storage = at::empty({elements}, at::TensorOptions().dtype(dtype));
    const size_t bytes = zip_.getRecordSize(record);
    DTRAIN_CHECK_AS(IOError, bytes == storage.nbytes(), "storage ", record, " holds ", bytes,
                    " bytes, not the ", storage.nbytes(), " of its ", elements, " elements");
    if (storage.nbytes() > 0) {
      zip_.getRecord(record, storage.mutable_data_ptr(), storage.nbytes());
    }
    loaded_.emplace(key, storage);
    return storage;
  }

 private:
  caffe2::serialize::PyTorchStreamReader& zip_;
  std::map<std::string, at::Tensor> loaded_;
};

// The first bytes of a zip archive, and of the pickle of torch.save's
// format before PyTorch 1.6.
bool starts_with(const std::string& path, std::string_view magic) {
  std::ifstream in(path, std::ios::binary);
  std::string head(magic.size(), '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  return in && head == magic;
}

c10::IValue read_zip(const std::string& path) {
  if (starts_with(path, "\x80\x02")) {
    throw IOError(
        "it is in torch.save's format before PyTorch 1.6; save it again with a newer "
        "PyTorch (torch.save(torch.load(old), new))");
  }
  if (!starts_with(path, "PK\x03\x04")) {
    throw IOError("it is not a file torch.save writes (a zip archive)");
  }
  std::unique_ptr<caffe2::serialize::PyTorchStreamReader> zip;
  try {
    zip = std::make_unique<caffe2::serialize::PyTorchStreamReader>(path);
  } catch (const c10::Error& e) {
    // LibTorch's first sentence says what failed; the rest is advice about
    // its own checkpoints.
    const std::string what = e.what_without_backtrace();
    throw IOError(fmt::format("its zip archive cannot be read (cut short?): {}",
                              what.substr(0, what.find(". "))));
  }
  if (zip->hasRecord("constants.pkl")) {
    throw IOError(
        "it is a TorchScript archive (torch::save, torch.jit.save, a dtrain "
        "checkpoint), not a state dict");
  }
  DTRAIN_CHECK_AS(IOError, zip->hasRecord("data.pkl"), "its zip archive holds no data.pkl");
  if (zip->hasRecord("byteorder")) {
    const auto [order, size] = zip->getRecord("byteorder");
    DTRAIN_CHECK_AS(IOError,
                    std::string_view(static_cast<const char*>(order.get()), size) == "little",
                    "its tensors are big-endian");
  }
  const auto [program, size] = zip->getRecord("data.pkl");
  Storages storages(*zip);
  return unpickle_weights(std::string_view(static_cast<const char*>(program.get()), size),
                          [&storages](const std::string& key, at::ScalarType dtype, int64_t n) {
                            return storages.load(key, dtype, n);
                          });
}

}  // namespace

c10::IValue torch_load_file(const std::string& path) {
  std::error_code ec;
  DTRAIN_CHECK_AS(IOError, std::filesystem::is_regular_file(path, ec), "cannot read state dict '",
                  path, "': no such file");
  try {
    return read_zip(path);
  } catch (const IOError& e) {
    throw IOError(fmt::format("cannot read state dict '{}': {}", path, e.what()));
  } catch (const c10::Error& e) {
    throw IOError(fmt::format("cannot read state dict '{}': {}", path, e.what_without_backtrace()));
  }
}

}  // namespace dtrain::train::detail
