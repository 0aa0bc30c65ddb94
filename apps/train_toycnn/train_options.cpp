#include "train_options.h"

#include "dtrain/datasets/fashion_mnist.h"
#include "dtrain/train/trainer_flags.h"

namespace dtrain::apps {

using train::Agreement;

void add_train_flags(train::FlagTable& flags, TrainOptions& options) {
  static const util::EnumWords<ImageSet> datasets{{"fashion-mnist", ImageSet::kFashionMnist},
                                                  {"cifar10", ImageSet::kCifar10}};
  flags.topic("Data");
  flags.add_choice("--dataset", options.dataset, datasets,
                   "fashion-mnist: Fashion-MNIST's IDX files (plain or .gz); cifar10: CIFAR-10's "
                   "binary version (data_batch_1.bin .. data_batch_5.bin, test_batch.bin)",
                   Agreement::same());
  flags.add("--data-dir", options.data_dir,
            "Directory of the dataset's files (default: Fashion-MNIST from " +
                datasets::fashion_mnist_default_root() +
                ", which $DTRAIN_FASHION_MNIST_DIR sets; CIFAR-10 from $DTRAIN_CIFAR10_DIR)",
            Agreement::may_differ());
  flags.advise("give each a --data-dir holding the same dataset");
  train::add_trainer_flags(flags, options.trainer);
  add_data_limit_flags(flags, options.limits, "images");
  flags.topic("Data");
  flags.add_switch(
      "--augment", options.augment,
      "Randomly crop (4 pixels of black padding) and horizontally flip training images",
      Agreement::same());
}

}  // namespace dtrain::apps
