#include "dtrain/datasets/cifar10.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <ATen/ATen.h>

#include "dtrain/util/errors.h"
#include "environment.h"
#include "text_lines.h"

namespace dtrain::datasets {

namespace {

namespace fs = std::filesystem;

constexpr int64_t kClasses = 10;
constexpr int64_t kChannels = 3;
constexpr int64_t kSide = 32;
constexpr int64_t kPixelBytes = kChannels * kSide * kSide;  // 3072
constexpr int64_t kRecordBytes = 1 + kPixelBytes;           // 3073

// The number of records in a batch file, from its size alone, so that every
// file of a split is checked before any is read.
int64_t count_records(const fs::path& root, const std::string& name) {
  const fs::path path = root / name;
  std::error_code ec;
  DTRAIN_CHECK_AS(IOError, fs::is_regular_file(path, ec), "CIFAR-10 file '", name,
                  "' not found in '", root.string(), "'");
  const std::uintmax_t bytes = fs::file_size(path, ec);
  DTRAIN_CHECK_AS(IOError, !ec, "cannot read the size of CIFAR-10 file '", path.string(),
                  "': ", ec.message());
  DTRAIN_CHECK_AS(IOError, bytes > 0, "CIFAR-10 file '", path.string(), "' is empty");
  DTRAIN_CHECK_AS(IOError, bytes % kRecordBytes == 0, "CIFAR-10 file '", path.string(), "' holds ",
                  bytes, " bytes, not a whole number of ", kRecordBytes,
                  "-byte records (1 label byte + ", kPixelBytes,
                  " pixel bytes): truncated, or not a file of the binary version");
  return static_cast<int64_t>(bytes / kRecordBytes);
}

// Fills `records` ((n, 3073) uint8, contiguous) with the whole file.
void read_records(const fs::path& path, at::Tensor records) {
  std::ifstream in(path, std::ios::binary);
  DTRAIN_CHECK_AS(IOError, in.is_open(), "cannot open CIFAR-10 file '", path.string(),
                  "': ", std::strerror(errno));
  in.read(reinterpret_cast<char*>(records.mutable_data_ptr<uint8_t>()), records.numel());
  // The size was checked a moment ago; a short read means the file changed
  // or the disk failed.
  DTRAIN_CHECK_AS(IOError, in.gcount() == records.numel(), "cannot read CIFAR-10 file '",
                  path.string(), "': got ", in.gcount(), " of ", records.numel(), " bytes");
}

// Names the first record of the file whose label is not a class.
void check_labels(const fs::path& path, const at::Tensor& labels) {
  const at::Tensor bad = (labels >= kClasses).nonzero();
  if (bad.numel() > 0) {
    const int64_t record = bad[0][0].item<int64_t>();
    throw IOError(detail::concat("CIFAR-10 file '", path.string(), "': record ", record,
                                 " (counting from 0) has label ", labels[record].item<int64_t>(),
                                 "; CIFAR-10 labels are 0-9"));
  }
}

std::vector<std::string> class_names(const fs::path& root) {
  const fs::path path = root / "batches.meta.txt";
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    return cifar10_standard_class_names();
  }
  std::vector<std::string> names = read_text_lines(path, "the class names, one a line");
  DTRAIN_CHECK_AS(IOError, static_cast<int64_t>(names.size()) == kClasses, "'", path.string(),
                  "' names ", names.size(), " classes; CIFAR-10 has ", kClasses, ", one a line");
  return names;
}

}  // namespace

std::string cifar10_default_root() {
  return env_or("DTRAIN_CIFAR10_DIR");
}

std::vector<std::string> cifar10_batch_files(Split split) {
  if (split == Split::kTest) {
    return {"test_batch.bin"};
  }
  return {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
          "data_batch_5.bin"};
}

const std::vector<std::string>& cifar10_standard_class_names() {
  static const std::vector<std::string> names = {
      "airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"};
  return names;
}

bool cifar10_installed(const std::string& root) {
  if (root.empty()) {
    return false;
  }
  for (const Split split : {Split::kTrain, Split::kTest}) {
    for (const std::string& name : cifar10_batch_files(split)) {
      std::error_code ec;
      if (!fs::is_regular_file(fs::path(root) / name, ec)) {
        return false;
      }
    }
  }
  return true;
}

LabeledImages load_cifar10(Split split, const Cifar10Options& options) {
  DTRAIN_CHECK_AS(IOError, !options.root().empty(),
                  "load_cifar10: no directory given: pass Cifar10Options().root(...) or set "
                  "DTRAIN_CIFAR10_DIR to the directory holding data_batch_1.bin .. "
                  "data_batch_5.bin and test_batch.bin (the unpacked cifar-10-batches-bin)");
  const fs::path root(options.root());
  std::error_code ec;
  DTRAIN_CHECK_AS(IOError, fs::is_directory(root, ec), "CIFAR-10 directory '", root.string(),
                  "' does not exist (pass the directory holding the binary version's .bin "
                  "files, cifar-10-batches-bin)");

  const std::vector<std::string> files = cifar10_batch_files(split);
  std::vector<int64_t> counts;
  int64_t total = 0;
  for (const std::string& name : files) {
    counts.push_back(count_records(root, name));
    total += counts.back();
  }
  LabeledImages out;
  out.class_names = class_names(root);

  at::Tensor records = at::empty({total, kRecordBytes}, at::kByte);
  int64_t begin = 0;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const at::Tensor slice = records.narrow(0, begin, counts[i]);
    read_records(root / files[i], slice);
    check_labels(root / files[i], slice.select(1, 0));
    begin += counts[i];
  }
  out.labels = records.select(1, 0).to(at::kLong);
  // The same arithmetic as ToTensor (x / 255 in float32) then Normalize
  // (- 0.5, / 0.5), so the values are bit for bit the seed's.
  out.images = records.narrow(1, 1, kPixelBytes)
                   .reshape({total, kChannels, kSide, kSide})
                   .to(at::kFloat)
                   .div_(255.0)
                   .sub_(0.5)
                   .div_(0.5)
                   .contiguous();
  return out;
}

}  // namespace dtrain::datasets
