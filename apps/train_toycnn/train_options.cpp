#include "train_options.h"

#include <fmt/format.h>

#include "dtrain/datasets/fashion_mnist.h"

namespace dtrain::apps {

std::vector<dist::Setting> shared_settings(const TrainOptions& options) {
  std::vector<dist::Setting> settings =
      shared_settings(static_cast<const CommonTrainOptions&>(options));
  settings.insert(settings.end(), {{"--dataset", options.dataset},
                                   {"--momentum", fmt::format("{}", options.momentum)},
                                   {"--augment", fmt::format("{}", options.augment)}});
  return settings;
}

void add_train_flags(CLI::App& app, TrainOptions& options) {
  take_last_flag_values(app);
  app.add_option("--dataset", options.dataset,
                 "fashion-mnist: Fashion-MNIST's IDX files (plain or .gz); cifar10: CIFAR-10's "
                 "binary version (data_batch_1.bin .. data_batch_5.bin, test_batch.bin)")
      ->check(CLI::IsMember({"fashion-mnist", "cifar10"}))
      ->capture_default_str();
  app.add_option("--data-dir", options.data_dir,
                 "Directory of the dataset's files (default: Fashion-MNIST from " +
                     datasets::fashion_mnist_default_root() +
                     ", which $DTRAIN_FASHION_MNIST_DIR sets; CIFAR-10 from $DTRAIN_CIFAR10_DIR)");
  add_common_train_flags(app, options, "images");
  app.add_option("--momentum", options.momentum, "SGD momentum")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_flag("--augment", options.augment,
               "Randomly crop (4 pixels of black padding) and horizontally flip training images");
}

}  // namespace dtrain::apps
