#include "dtrain/datasets/idx.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include <ATen/ops/empty.h>

#include "dtrain/util/errors.h"

namespace dtrain::datasets {

namespace {

// Reads through zlib so that .gz and plain files take the same path.
class GzFile {
 public:
  explicit GzFile(const std::string& path) : path_(path) {
    std::error_code ec;
    DTRAIN_CHECK_AS(IOError, std::filesystem::is_regular_file(path, ec), "IDX file '", path,
                    "' does not exist or is not a regular file");
    file_ = gzopen(path.c_str(), "rb");
    DTRAIN_CHECK_AS(IOError, file_ != nullptr, "cannot open IDX file '", path,
                    "': ", std::strerror(errno));
    gzbuffer(file_, 1 << 20);
  }
  ~GzFile() {
    if (file_ != nullptr) {
      gzclose(file_);
    }
  }
  GzFile(const GzFile&) = delete;
  GzFile& operator=(const GzFile&) = delete;

  // Reads exactly n bytes; `what` names the part of the file for the error.
  void read_exactly(void* into, std::size_t n, const char* what) {
    auto* out = static_cast<unsigned char*>(into);
    std::size_t got = 0;
    while (got < n) {
      const unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(n - got, 1u << 30));
      const int read = gzread(file_, out + got, chunk);
      if (read < 0) {
        int code = 0;
        const char* message = gzerror(file_, &code);
        throw IOError(detail::concat("IDX file '", path_, "' is corrupt while reading ", what, ": ",
                                     message));
      }
      if (read == 0) {
        break;
      }
      got += static_cast<std::size_t>(read);
    }
    DTRAIN_CHECK_AS(IOError, got == n, "IDX file '", path_, "' is truncated: ", what, " needs ", n,
                    " bytes but only ", got, " remain");
  }

 private:
  std::string path_;
  gzFile file_ = nullptr;
};

struct ElementType {
  at::ScalarType dtype;
  std::size_t bytes;
};

ElementType element_type(unsigned char code, const std::string& path) {
  switch (code) {
    case 0x08:
      return {at::kByte, 1};
    case 0x09:
      return {at::kChar, 1};
    case 0x0B:
      return {at::kShort, 2};
    case 0x0C:
      return {at::kInt, 4};
    case 0x0D:
      return {at::kFloat, 4};
    case 0x0E:
      return {at::kDouble, 8};
    default:
      throw IOError(detail::concat("IDX file '", path, "' has unknown element type code 0x",
                                   std::hex, static_cast<int>(code),
                                   " (expected 0x08, 0x09, 0x0B, 0x0C, 0x0D or 0x0E)"));
  }
}

std::uint32_t big_endian_u32(const unsigned char* bytes) {
  return (std::uint32_t{bytes[0]} << 24) | (std::uint32_t{bytes[1]} << 16) |
         (std::uint32_t{bytes[2]} << 8) | std::uint32_t{bytes[3]};
}

// IDX stores multi-byte elements big-endian; this machine is little-endian.
void swap_to_host_order(unsigned char* data, std::size_t count, std::size_t width) {
  if (width == 1) {
    return;
  }
  for (std::size_t i = 0; i < count; ++i) {
    std::reverse(data + i * width, data + (i + 1) * width);
  }
}

// A corrupt header must not make us allocate terabytes before noticing.
constexpr std::uint64_t kMaxIdxBytes = std::uint64_t{16} << 30;

}  // namespace

at::Tensor read_idx(const std::string& path) {
  GzFile file(path);
  std::array<unsigned char, 4> magic{};
  file.read_exactly(magic.data(), magic.size(), "the magic number");
  DTRAIN_CHECK_AS(IOError, magic[0] == 0 && magic[1] == 0 && magic[3] >= 1, "'", path,
                  "' is not an IDX file: bad magic number (expected 00 00 <type> <ndim>)");
  const ElementType type = element_type(magic[2], path);
  const int ndim = magic[3];

  std::vector<unsigned char> header(static_cast<std::size_t>(ndim) * 4);
  file.read_exactly(header.data(), header.size(), "the dimensions");
  std::vector<int64_t> shape;
  std::uint64_t count = 1;
  for (int d = 0; d < ndim; ++d) {
    const std::uint32_t size = big_endian_u32(header.data() + 4 * d);
    shape.push_back(size);
    count *= size;
    DTRAIN_CHECK_AS(IOError, count * type.bytes <= kMaxIdxBytes, "IDX file '", path,
                    "' declares an implausible size (over ", kMaxIdxBytes >> 30,
                    " GiB); the header is corrupt");
  }

  at::Tensor data = at::empty(shape, at::TensorOptions().dtype(type.dtype));
  auto* bytes = static_cast<unsigned char*>(data.mutable_data_ptr());
  file.read_exactly(bytes, count * type.bytes, "the data");
  swap_to_host_order(bytes, count, type.bytes);
  return data;
}

}  // namespace dtrain::datasets
