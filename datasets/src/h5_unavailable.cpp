// H5File in a build without HDF5 (DTRAIN_WITH_HDF5 is 0): every entry raises.
#include "h5_file.h"

#include <utility>

#include "dtrain/util/errors.h"

namespace dtrain::datasets {

namespace {

[[noreturn]] void no_hdf5(const char* caller) {
  throw Error(detail::concat(
      caller,
      ": this build of dtrain has no HDF5, which ModelNet40's files and the synthetic shapes' "
      "use (configure with -DDTRAIN_HDF5=ON after installing HDF5, e.g. apt-get install "
      "libhdf5-dev; generate_synthetic_shapes makes the synthetic clouds in memory without it)"));
}

}  // namespace

void require_hdf5(const char* caller) {
  no_hdf5(caller);
}

H5File::H5File(std::string path, Mode) : path_(std::move(path)) {
  no_hdf5("H5File");
}

H5File::~H5File() = default;

bool H5File::has(const std::string&) const {
  no_hdf5("H5File::has");
}

std::vector<int64_t> H5File::shape(const std::string&) const {
  no_hdf5("H5File::shape");
}

at::Tensor H5File::read(const std::string&, at::ScalarType) const {
  no_hdf5("H5File::read");
}

void H5File::write(const std::string&, const at::Tensor&) {
  no_hdf5("H5File::write");
}

void H5File::close() {}

}  // namespace dtrain::datasets
