#include "image_data.h"

#include "dtrain/datasets/cifar10.h"
#include "dtrain/datasets/fashion_mnist.h"
#include "dtrain/util/errors.h"

namespace dtrain::apps {

namespace {

namespace ds = dtrain::datasets;

std::string dataset_root(const TrainOptions& options) {
  if (!options.data_dir.empty()) {
    return options.data_dir;
  }
  if (options.dataset == ImageSet::kCifar10) {
    const std::string root = ds::cifar10_default_root();
    DTRAIN_CHECK(!root.empty(),
                 "--dataset cifar10 needs --data-dir (or $DTRAIN_CIFAR10_DIR): the directory of "
                 "the binary version's data_batch_1.bin .. data_batch_5.bin and test_batch.bin "
                 "(cifar-10-batches-bin)");
    return root;
  }
  return ds::fashion_mnist_default_root();
}

ds::LabeledImages load_split(const TrainOptions& options, const std::string& root,
                             ds::Split split) {
  if (options.dataset == ImageSet::kCifar10) {
    return ds::load_cifar10(split, ds::Cifar10Options().root(root));
  }
  return ds::load_fashion_mnist(split, ds::FashionMnistOptions().root(root));
}

}  // namespace

ImageData load_image_data(const TrainOptions& options) {
  ImageData data;
  data.root = dataset_root(options);
  data.name = options.dataset == ImageSet::kCifar10 ? "CIFAR-10" : "Fashion-MNIST";
  const ds::LabeledImages train = load_split(options, data.root, ds::Split::kTrain);
  const ds::LabeledImages test = load_split(options, data.root, ds::Split::kTest);
  data.train = LabeledTensors{train.images, train.labels}.first(options.limits.train);
  data.test = LabeledTensors{test.images, test.labels}.first(options.limits.test);
  data.class_names = train.class_names;
  data.channels = train.images.size(1);
  return data;
}

}  // namespace dtrain::apps
