#include "h5_file.h"

#include <hdf5.h>

#include <mutex>
#include <type_traits>
#include <utility>

#include <ATen/ops/empty.h>

#include "dtrain/util/errors.h"

namespace dtrain::datasets {

static_assert(std::is_same_v<hid_t, int64_t>, "H5File keeps hid_t as an int64_t (HDF5 >= 1.10)");

namespace {

std::mutex& hdf5_mutex() {
  static std::mutex mutex;
  return mutex;
}

// One HDF5 call of ours: holds the lock, and keeps HDF5 from printing its
// error stack (we raise our own errors) until it ends, when the caller's
// printing setting comes back.
class Hdf5Call {
 public:
  Hdf5Call() : lock_(hdf5_mutex()) {
    H5Eget_auto2(H5E_DEFAULT, &print_, &print_data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~Hdf5Call() {
    H5Eclear2(H5E_DEFAULT);
    H5Eset_auto2(H5E_DEFAULT, print_, print_data_);
  }
  Hdf5Call(const Hdf5Call&) = delete;
  Hdf5Call& operator=(const Hdf5Call&) = delete;

 private:
  std::lock_guard<std::mutex> lock_;
  H5E_auto2_t print_ = nullptr;
  void* print_data_ = nullptr;
};

// ": <innermost message>" from HDF5's error stack, or "" when it is empty.
std::string hdf5_detail() {
  std::string detail;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned n, const H5E_error2_t* error, void* out) -> herr_t {
        if (n == 0 && error->desc != nullptr) {
          *static_cast<std::string*>(out) = std::string(": ") + error->desc;
        }
        return 0;
      },
      &detail);
  return detail;
}

// An HDF5 identifier closed by its own close function when it goes.
class Handle {
 public:
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Handle() {
    if (id_ >= 0) {
      close_(id_);
    }
  }
  Handle(Handle&& other) noexcept : id_(std::exchange(other.id_, -1)), close_(other.close_) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

// A corrupt file must not make us allocate terabytes before noticing.
constexpr uint64_t kMaxDatasetBytes = uint64_t{16} << 30;

}  // namespace

void require_hdf5(const char*) {}

H5File::H5File(std::string path, Mode mode) : path_(std::move(path)) {
  Hdf5Call call;
  if (mode == Mode::kRead) {
    id_ = H5Fopen(path_.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    DTRAIN_CHECK_AS(IOError, id_ >= 0, "cannot open HDF5 file '", path_, "'", hdf5_detail());
  } else {
    id_ = H5Fcreate(path_.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT);
    DTRAIN_CHECK_AS(IOError, id_ >= 0, "cannot create HDF5 file '", path_,
                    "' (it must not exist yet)", hdf5_detail());
  }
}

H5File::~H5File() {
  if (id_ >= 0) {
    Hdf5Call call;
    H5Fclose(id_);
  }
}

void H5File::close() {
  if (id_ < 0) {
    return;
  }
  Hdf5Call call;
  const herr_t status = H5Fclose(id_);
  id_ = -1;
  DTRAIN_CHECK_AS(IOError, status >= 0, "cannot close HDF5 file '", path_, "'", hdf5_detail());
}

bool H5File::has(const std::string& name) const {
  DTRAIN_CHECK_AS(IOError, id_ >= 0, "HDF5 file '", path_, "' is closed");
  Hdf5Call call;
  const htri_t exists = H5Lexists(id_, name.c_str(), H5P_DEFAULT);
  DTRAIN_CHECK_AS(IOError, exists >= 0, "cannot look up '", name, "' in HDF5 file '", path_, "'",
                  hdf5_detail());
  return exists > 0;
}

namespace {

Handle open_dataset(const H5File& file, hid_t id, const std::string& name) {
  const htri_t exists = H5Lexists(id, name.c_str(), H5P_DEFAULT);
  DTRAIN_CHECK_AS(IOError, exists > 0, "HDF5 file '", file.path(), "' has no dataset '", name, "'",
                  hdf5_detail());
  Handle dataset(H5Dopen2(id, name.c_str(), H5P_DEFAULT), H5Dclose);
  DTRAIN_CHECK_AS(IOError, dataset.valid(), "cannot open dataset '", name, "' of HDF5 file '",
                  file.path(), "'", hdf5_detail());
  return dataset;
}

std::vector<int64_t> dataset_shape(const H5File& file, hid_t dataset, const std::string& name) {
  Handle space(H5Dget_space(dataset), H5Sclose);
  const int rank = space.valid() ? H5Sget_simple_extent_ndims(space.get()) : -1;
  DTRAIN_CHECK_AS(IOError, rank >= 0, "cannot read the shape of dataset '", name,
                  "' of HDF5 file '", file.path(), "'", hdf5_detail());
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  return std::vector<int64_t>(dims.begin(), dims.end());
}

}  // namespace

std::vector<int64_t> H5File::shape(const std::string& name) const {
  DTRAIN_CHECK_AS(IOError, id_ >= 0, "HDF5 file '", path_, "' is closed");
  Hdf5Call call;
  Handle dataset = open_dataset(*this, id_, name);
  return dataset_shape(*this, dataset.get(), name);
}

at::Tensor H5File::read(const std::string& name, at::ScalarType dtype) const {
  DTRAIN_CHECK_AS(IOError, id_ >= 0, "HDF5 file '", path_, "' is closed");
  Hdf5Call call;
  Handle dataset = open_dataset(*this, id_, name);
  const std::vector<int64_t> shape = dataset_shape(*this, dataset.get(), name);

  Handle type(H5Dget_type(dataset.get()), H5Tclose);
  const H5T_class_t type_class = type.valid() ? H5Tget_class(type.get()) : H5T_NO_CLASS;
  hid_t memory_type = -1;
  bool matches = false;
  switch (dtype) {
    case at::kFloat:
      memory_type = H5T_NATIVE_FLOAT;
      matches = type_class == H5T_FLOAT;
      break;
    case at::kLong:
      memory_type = H5T_NATIVE_INT64;
      matches = type_class == H5T_INTEGER;
      break;
    case at::kByte:
      memory_type = H5T_NATIVE_UINT8;
      matches = type_class == H5T_INTEGER;
      break;
    default:
      DTRAIN_INTERNAL_ASSERT(false, "H5File::read supports float32, int64 and uint8, not ", dtype);
  }
  DTRAIN_CHECK_AS(IOError, matches, "dataset '", name, "' of HDF5 file '", path_, "' must hold ",
                  dtype == at::kFloat ? "floating-point numbers" : "integers", ", not ",
                  type_class == H5T_FLOAT     ? "floating-point numbers"
                  : type_class == H5T_INTEGER ? "integers"
                                              : "values of another HDF5 type class");

  uint64_t bytes = at::elementSize(dtype);
  for (int64_t d : shape) {
    bytes *= static_cast<uint64_t>(d);
    DTRAIN_CHECK_AS(IOError, bytes <= kMaxDatasetBytes, "dataset '", name, "' of HDF5 file '",
                    path_, "' has an implausible shape ", at::IntArrayRef(shape), " (over ",
                    kMaxDatasetBytes >> 30, " GiB as ", dtype, ")");
  }
  at::Tensor out = at::empty(shape, at::TensorOptions().dtype(dtype));
  if (out.numel() > 0) {
    const herr_t status =
        H5Dread(dataset.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.mutable_data_ptr());
    DTRAIN_CHECK_AS(IOError, status >= 0, "cannot read dataset '", name, "' of HDF5 file '", path_,
                    "'", hdf5_detail());
  }
  return out;
}

void H5File::write(const std::string& name, const at::Tensor& tensor) {
  DTRAIN_CHECK_AS(IOError, id_ >= 0, "HDF5 file '", path_, "' is closed");
  DTRAIN_CHECK(tensor.defined() && tensor.device().is_cpu() && tensor.dim() >= 1,
               "H5File::write of dataset '", name, "' to '", path_,
               "': needs a CPU tensor of at least one dimension");
  Hdf5Call call;  // before the type macros below, which start up HDF5
  hid_t file_type = -1;
  hid_t memory_type = -1;
  switch (tensor.scalar_type()) {
    case at::kFloat:
      file_type = H5T_IEEE_F32LE;
      memory_type = H5T_NATIVE_FLOAT;
      break;
    case at::kByte:
      file_type = H5T_STD_U8LE;
      memory_type = H5T_NATIVE_UINT8;
      break;
    case at::kLong:
      file_type = H5T_STD_I64LE;
      memory_type = H5T_NATIVE_INT64;
      break;
    default:
      throw Error(detail::concat("H5File::write of dataset '", name, "' to '", path_,
                                 "': dtype must be float32, uint8 or int64, got ",
                                 tensor.scalar_type()));
  }
  const at::Tensor data = tensor.contiguous();
  std::vector<hsize_t> dims(data.sizes().begin(), data.sizes().end());
  Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
  Handle properties(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  // No modification times in the object header: the same tensors then give
  // the same bytes, so a dataset can be compared by its files.
  const bool ready =
      space.valid() && properties.valid() && H5Pset_obj_track_times(properties.get(), false) >= 0;
  DTRAIN_CHECK_AS(IOError, ready, "cannot describe dataset '", name, "' ", data.sizes(),
                  " for HDF5 file '", path_, "'", hdf5_detail());
  Handle dataset(H5Dcreate2(id_, name.c_str(), file_type, space.get(), H5P_DEFAULT,
                            properties.get(), H5P_DEFAULT),
                 H5Dclose);
  DTRAIN_CHECK_AS(IOError, dataset.valid(), "cannot create dataset '", name, "' in HDF5 file '",
                  path_, "'", hdf5_detail());
  if (data.numel() > 0) {
    const herr_t status =
        H5Dwrite(dataset.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.const_data_ptr());
    DTRAIN_CHECK_AS(IOError, status >= 0, "cannot write dataset '", name, "' to HDF5 file '", path_,
                    "'", hdf5_detail());
  }
}

}  // namespace dtrain::datasets
