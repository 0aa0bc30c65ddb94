// CIFAR-10 (Krizhevsky, 2009): 50,000 training and 10,000 test colour
// images of 10 classes, 32x32, in the "CIFAR-10 binary version"
// (cifar-10-binary.tar.gz, unpacked to cifar-10-batches-bin).
//
// The layout: one directory holding
//   data_batch_1.bin .. data_batch_5.bin  the training split, in this order
//   test_batch.bin                        the test split
//   batches.meta.txt                      optional: the 10 class names, one a
//                                         line; label i is line i (without
//                                         it, the standard names below)
// Each .bin file is a run of 3,073-byte records: 1 label byte (0-9), then
// 3,072 pixel bytes, the 1,024 red values, the 1,024 green, the 1,024
// blue, each plane row-major. The published files hold 10,000 records
// each; any whole number of records is accepted.
//
// There is no download: pass the directory, or set DTRAIN_CIFAR10_DIR.
//
//   auto train = dtrain::datasets::load_cifar10(
//       dtrain::datasets::Split::kTrain,
//       dtrain::datasets::Cifar10Options().root("cifar-10-batches-bin"));
//   train.images       // (50000, 3, 32, 32) float32 in [-1, 1], channels R, G, B
//   train.labels       // (50000,) int64 in [0, 9]
//   train.class_names  // "airplane", "automobile", ..., "truck"
//
// Contract: loading reads the split's files whole into memory. It throws
// dtrain::IOError naming the directory or file and what was wrong: no
// directory given, a missing directory or file, an empty file, a size
// that is not a whole number of records, a label above 9, a class-name
// file that does not name 10 classes.
#pragma once

#include <string>
#include <vector>

#include <torch/arg.h>

#include "dtrain/datasets/labeled_images.h"
#include "dtrain/datasets/split.h"

namespace dtrain::datasets {

// $DTRAIN_CIFAR10_DIR when set, else empty (loading then asks for a directory).
std::string cifar10_default_root();

// The names of the batch files of `split`, in the order they are read.
std::vector<std::string> cifar10_batch_files(Split split);

// airplane, automobile, bird, cat, deer, dog, frog, horse, ship, truck:
// the names the published batches.meta.txt holds.
const std::vector<std::string>& cifar10_standard_class_names();

// True when `root` holds all six batch files, e.g. to skip work that needs
// the real data.
bool cifar10_installed(const std::string& root = cifar10_default_root());

struct Cifar10Options {
  // The directory holding the .bin files (cifar-10-batches-bin).
  TORCH_ARG(std::string, root) = cifar10_default_root();
};

// Loads one split, the batch files concatenated in order, scaled to
// [-1, 1] as (x/255 - 0.5) / 0.5 like the seed's ToTensor() followed by
// Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5)).
LabeledImages load_cifar10(Split split, const Cifar10Options& options = {});

}  // namespace dtrain::datasets
