// What the tests of dtrain's HDF5 files share: skipping in a build without
// HDF5, and writing small .h5 fixtures through dtrain's own H5File
// (datasets/src/h5_file.h).
#pragma once

#include <gtest/gtest.h>

#include <ATen/core/Tensor.h>

#include <ATen/ATen.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "dtrain/config.h"
#include "h5_file.h"

#define DTRAIN_SKIP_WITHOUT_HDF5()                                                         \
  do {                                                                                     \
    if (!DTRAIN_WITH_HDF5) {                                                               \
      GTEST_SKIP() << "this build of dtrain has no HDF5 (configured with DTRAIN_HDF5=OFF " \
                      "or without libhdf5-dev)";                                           \
    }                                                                                      \
  } while (false)

namespace dtrain::testing {

// A new .h5 file holding each (name, tensor) as a dataset.
inline void write_h5(const std::filesystem::path& path,
                     const std::vector<std::pair<std::string, at::Tensor>>& datasets) {
  dtrain::datasets::H5File file(path.string(), dtrain::datasets::H5File::Mode::kCreate);
  for (const auto& [name, tensor] : datasets) {
    file.write(name, tensor);
  }
  file.close();
}

// A small text file (a file list, class names) holding `text`.
inline void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
}

// n distinct clouds of `points` points: coordinates first + 0, 1, 2, ...
inline at::Tensor clouds(int64_t n, int64_t points, float first = 0.0f) {
  return at::arange(n * points * 3, at::kFloat).reshape({n, points, 3}).add_(first);
}

}  // namespace dtrain::testing
