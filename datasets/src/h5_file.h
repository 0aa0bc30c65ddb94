// A small RAII handle over one HDF5 file, through HDF5's C API: whole
// datasets in and out as tensors, for ModelNet40's files and the synthetic
// shapes' (point_clouds.h).
//
// Every failure throws dtrain::IOError naming the file and the dataset and,
// where HDF5 says more, its innermost message ("unable to open file: ...
// errno = 2, ..."); HDF5's own printing of its error stack is silenced for
// our calls. Each call holds one process-wide lock, since a serial build of
// HDF5 (Debian's has a thread-safe one, others may not) must not be entered
// by two threads at once.
//
// Built from h5_file.cpp with HDF5, or from h5_unavailable.cpp without it
// (-DDTRAIN_HDF5=OFF), where require_hdf5 and every member throw dtrain::Error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace dtrain::datasets {

// Throws dtrain::Error naming `caller` when this build of dtrain has no
// HDF5, so that the public functions fail before they do any work.
void require_hdf5(const char* caller);

class H5File {
 public:
  enum class Mode {
    kRead,    // an existing file, read-only
    kCreate,  // a new file; an error when one exists at the path
  };

  H5File(std::string path, Mode mode);
  ~H5File();  // closes the file; ignores a failure (close() reports it)
  H5File(const H5File&) = delete;
  H5File& operator=(const H5File&) = delete;

  const std::string& path() const { return path_; }
  // Whether the file holds a dataset (or group) called `name`.
  bool has(const std::string& name) const;
  // The dataset's dimensions.
  std::vector<int64_t> shape(const std::string& name) const;
  // The whole dataset, converted by HDF5 to dtype: at::kFloat from any
  // floating-point dataset, at::kLong or at::kByte from any integer one
  // (an integer dataset read as float, or the reverse, is an error).
  at::Tensor read(const std::string& name, at::ScalarType dtype) const;
  // A new dataset holding a CPU tensor of at least one dimension, stored
  // little-endian as float32, uint8 or int64 (the tensor's dtype), without
  // modification times, so that equal tensors make equal files.
  void write(const std::string& name, const at::Tensor& tensor);
  // Closes now and throws when HDF5 could not flush the file.
  void close();

 private:
  std::string path_;
  int64_t id_ = -1;  // HDF5's hid_t (an int64_t), kept opaque so that this header needs no hdf5.h
};

}  // namespace dtrain::datasets
