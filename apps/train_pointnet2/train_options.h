// Flags of train_pointnet2 and their checks.
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "train_flags.h"

namespace dtrain::apps {

struct PointNet2TrainOptions : CommonTrainOptions {
  // "synthetic": the embedded synthetic-shapes dataset, generated on first
  // use; "modelnet40": ModelNet40's published HDF5 files in data_dir.
  std::string dataset = "synthetic";
  std::string data_dir;  // empty: the dataset's default directory
  int64_t synthetic_classes = 10;
  int64_t synthetic_train_per_class = 100;
  int64_t synthetic_test_per_class = 25;
  int64_t num_points = 1024;  // points of each cloud fed to the model
  bool normals = false;       // feed normals as point features
  std::string model = "ssg";
  double weight_decay = 1e-4;
  double lr_decay = 0.7;  // the rate is multiplied by this every lr_step epochs
  int lr_step = 20;
  bool augment = true;       // random scale, shift and jitter of training clouds
  bool rotate = false;       // random rotation about the up axis as well
  double point_dropout = 0;  // largest share of points dropped per cloud
  std::string checkpoint;    // written by rank 0 after every epoch; empty: none
  bool resume = false;       // continue from `checkpoint` when it exists

  PointNet2TrainOptions() {
    csv = "out/train_pointnet2.csv";
    epochs = 20;
    batch_size = 16;
    lr = 1e-3;
  }
};

// Registers every flag on `app`, with ranges checked by CLI11 at parse time.
void add_train_flags(CLI::App& app, PointNet2TrainOptions& options);

}  // namespace dtrain::apps
