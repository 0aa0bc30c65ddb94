// train_toycnn: the seed tutorial's toy CNN on Fashion-MNIST (the default)
// or CIFAR-10 (--dataset cifar10, the seed's own data), in one process or
// data-parallel over several, by dtrain::train::Trainer.
//
// Launched with a world size above 1 (dtrun, torchrun-style variables,
// mpirun or srun) it joins the process group, wraps the model in
// DistributedDataParallel and shards every epoch with DistributedSampler
// (PyTorch's semantics: seed + epoch shuffle, padded to a multiple of the
// world size; --rank-weights splits it unequally, for mixed hardware);
// --batch-size is per process, as in PyTorch DDP. Each epoch:
// mini-batch SGD with a progress bar, then test loss and accuracy over the
// whole test set (each rank evaluates a slice), logged and appended to the
// CSV report by rank 0, and a checkpoint when --checkpoint names one
// (--resume continues from it). --augment adds the standard CIFAR
// augmentation (random crop with 4 pixels of black padding, horizontal
// flip).
#include <ATen/ATen.h>
#include <fmt/format.h>

#include "classification.h"
#include "dtrain/data/image_augment.h"
#include "dtrain/models/toy_cnn.h"
#include "dtrain/train/optimizers.h"
#include "dtrain/train/trainer.h"
#include "dtrain/train/trainer_flags.h"
#include "dtrain/util/cli_app.h"
#include "image_data.h"
#include "plots.h"
#include "train_options.h"

namespace {

using namespace dtrain::apps;
using dtrain::models::ToyCnn;

// Training-image augmentation drawing from each batch's own generator
// (batch_generator): ranks draw differently, and a rerun with the same
// seed draws the same. The padding is -1, black after normalisation, as
// torchvision pads the raw image with 0 before ToTensor and Normalize (and
// the colour of Fashion-MNIST's background and border).
dtrain::train::TensorDataset::Augment make_augment(const TrainOptions& options) {
  if (!options.augment) {
    return {};
  }
  const auto augment = dtrain::data::ImageAugmentOptions().pad(4).fill(-1.0).flip_probability(0.5);
  return [augment](const at::Tensor& images, at::Generator& generator) {
    return dtrain::data::augment_images(images, augment, generator);
  };
}

int train(const TrainOptions& options, const dtrain::train::FlagTable& flags) {
  // The curves' PNG, drawn again after each epoch's row (rank 0 writes them).
  dtrain::apps::TrainingCurves curves;
  dtrain::train::Trainer trainer(
      dtrain::train::TrainerOptions(options.trainer)
          .after_report_row([&curves](const std::string& csv) { curves.update(csv); }),
      flags);
  const ImageData data = load_image_data(options);
  torch::manual_seed(options.trainer.seed());
  ToyCnn model(dtrain::models::ToyCnnOptions()
                   .in_channels(data.channels)
                   .num_classes(static_cast<int64_t>(data.class_names.size())));
  model->to(trainer.device());
  // SGD with momentum 0.9 unless the flags say otherwise (--optimizer, --momentum).
  const auto optimizer =
      dtrain::train::make_optimizer(*model, options.trainer.lr(), options.trainer.optimizer());
  dtrain::train::TensorDataset train_set({data.train.inputs, data.train.labels},
                                         make_augment(options));
  train_set.summary(fmt::format(
      "{} from {}: {} training, {} test images{}", data.name, data.root, data.train.size(),
      data.test.size(), options.augment ? " (training images randomly cropped and flipped)" : ""));
  return trainer.fit(model, *optimizer, train_set, classification_step<ToyCnn>(),
                     classification_evaluation<ToyCnn>(data.test));
}

}  // namespace

int main(int argc, char** argv) {
  dtrain::train::set_up_training_process();
  CLI::App app{
      "Train the seed tutorial's toy CNN on Fashion-MNIST or CIFAR-10 (CPU or GPU; data-parallel "
      "when launched with several processes by dtrun, mpirun or srun)",
      "train_toycnn"};
  TrainOptions options;
  dtrain::train::FlagTable flags(app);
  add_train_flags(flags, options);
  dtrain::train::add_trainer_help(flags, {"--dataset", "--data-dir"});
  return dtrain::util::run_cli_app(app, argc, argv, [&] { return train(options, flags); });
}
