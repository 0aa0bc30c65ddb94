#include "train_options.h"

#include "dtrain/datasets/fashion_mnist.h"

namespace dtrain::apps {

void add_train_flags(CLI::App& app, TrainOptions& options) {
  // A flag given twice takes its last value, as with argparse: scripts put
  // their defaults first and pass the user's arguments after them.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  options.data_dir = datasets::fashion_mnist_default_root();
  app.add_option("--data-dir", options.data_dir,
                 "Directory with the Fashion-MNIST IDX files (plain or .gz)")
      ->capture_default_str();
  add_common_train_flags(app, options, "images");
  app.add_option("--momentum", options.momentum, "SGD momentum")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
}

}  // namespace dtrain::apps
