#include "dtrain/datasets/fashion_mnist.h"

#include <filesystem>
#include <iterator>

#include <ATen/ATen.h>

#include "dtrain/datasets/idx.h"
#include "dtrain/util/errors.h"
#include "environment.h"

namespace dtrain::datasets {

namespace {

constexpr int64_t kClasses = 10;
constexpr int64_t kSide = 28;

// Label i is the i-th name, as Zalando's README lists them.
const char* const kClassNames[] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                   "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

const char* const kStems[] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                              "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};

// The file for `stem` in root, plain or gzipped; empty when neither exists.
std::string existing_idx_file(const std::filesystem::path& root, const std::string& stem) {
  for (const std::string& name : {stem, stem + ".gz"}) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(root / name, ec)) {
      return (root / name).string();
    }
  }
  return {};
}

std::string find_idx_file(const std::filesystem::path& root, const std::string& stem) {
  if (std::string path = existing_idx_file(root, stem); !path.empty()) {
    return path;
  }
  throw IOError(detail::concat("Fashion-MNIST file '", stem, "' (or '", stem,
                               ".gz') not found in '", root.string(), "'"));
}

}  // namespace

std::string fashion_mnist_default_root() {
  return env_or("DTRAIN_FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist");
}

bool fashion_mnist_installed(const std::string& root) {
  for (const char* stem : kStems) {
    if (existing_idx_file(root, stem).empty()) {
      return false;
    }
  }
  return true;
}

LabeledImages load_fashion_mnist(Split split, const FashionMnistOptions& options) {
  const std::filesystem::path root(options.root());
  std::error_code ec;
  DTRAIN_CHECK_AS(IOError, std::filesystem::is_directory(root, ec), "Fashion-MNIST directory '",
                  root.string(),
                  "' does not exist (install Debian's dataset-fashion-mnist or pass the "
                  "directory holding the IDX files)");
  const std::string prefix = split == Split::kTrain ? "train" : "t10k";
  const std::string image_path = find_idx_file(root, prefix + "-images-idx3-ubyte");
  const std::string label_path = find_idx_file(root, prefix + "-labels-idx1-ubyte");

  at::Tensor raw_images = read_idx(image_path);
  at::Tensor raw_labels = read_idx(label_path);
  DTRAIN_CHECK_AS(IOError,
                  raw_images.dim() == 3 && raw_images.size(1) == kSide &&
                      raw_images.size(2) == kSide && raw_images.scalar_type() == at::kByte,
                  "'", image_path, "' must hold uint8 images of shape (N, 28, 28), got ",
                  raw_images.scalar_type(), " ", raw_images.sizes());
  DTRAIN_CHECK_AS(IOError, raw_labels.dim() == 1 && raw_labels.scalar_type() == at::kByte, "'",
                  label_path, "' must hold uint8 labels of shape (N,), got ",
                  raw_labels.scalar_type(), " ", raw_labels.sizes());
  DTRAIN_CHECK_AS(IOError, raw_images.size(0) == raw_labels.size(0), "'", image_path, "' has ",
                  raw_images.size(0), " images but '", label_path, "' has ", raw_labels.size(0),
                  " labels");
  const int64_t max_label = raw_labels.numel() > 0 ? raw_labels.max().item<int64_t>() : 0;
  DTRAIN_CHECK_AS(IOError, max_label < kClasses, "'", label_path, "' holds label ", max_label,
                  "; Fashion-MNIST labels are 0-9");

  at::Tensor images = raw_images.unsqueeze(1).to(at::kFloat).div_(255.0).sub_(0.5).div_(0.5);
  if (options.pad_to_32()) {
    // Padding happens after normalising, so the border is -1 like the image background.
    images = at::constant_pad_nd(images, {2, 2, 2, 2}, -1.0);
  }
  return {images.contiguous(), raw_labels.to(at::kLong),
          std::vector<std::string>(std::begin(kClassNames), std::end(kClassNames))};
}

}  // namespace dtrain::datasets
