// Synthetic shapes: a small ModelNet-like dataset that dtrain generates
// itself, so point-cloud training runs with no download.
//
// Each class is one kind of solid (sphere, cube, cylinder, ...; see
// synthetic_shape_names()). A cloud is points_per_cloud points drawn
// uniformly over the solid's surface (area-weighted across its faces),
// with a random scale of each axis in [0.8, 1.25], a random rotation about
// the up axis (y, as in ModelNet's HDF5 files), Gaussian jitter (standard
// deviation 0.01 on solids about 2 across), then centred and scaled into
// the unit sphere like ModelNet's clouds.
// Normals are the surface's outward unit normals, transformed likewise.
// Within a split the classes are mixed in a shuffled order.
//
// Generation is deterministic: the same options give bit-for-bit the same
// tensors on every machine (the generator draws raw 64-bit numbers from
// std::mt19937_64 and does its own arithmetic; no std:: distributions or
// libm functions, whose last bits differ between implementations).
//
// Every point also carries the part of its solid it lies on (a cube's top,
// bottom and sides; a cone's side and base; the upper and lower half of a
// sphere; 2 or 3 parts a solid, numbered across all solids like
// ShapeNet-Part's 50 parts: synthetic_part_names()), for part segmentation.
//
// On disk it takes ModelNet40's HDF5 layout (point_clouds.h) and
// ShapeNet-Part's (shapenet_part.h) at once -- each .h5 file holds 'data',
// 'label', 'normal' and 'pid', and the directory both layouts' lists -- so
// load_modelnet_h5 and load_shapenet_part_h5 both read it, as they read
// the real datasets. The default options (1,250 clouds of 1,024 points,
// 30 MB) take well under a second to generate and write, on one thread.
// The example, with small options, is a test (test_synthetic_shapes.cpp):
//
//   namespace ds = dtrain::datasets;
//   const auto options = ds::SyntheticShapesOptions().num_classes(10);
//   const std::string root =
//       ds::ensure_synthetic_shapes(ds::synthetic_shapes_default_root(options), options);
//   auto train = ds::load_modelnet_h5(ds::Split::kTrain, ds::ModelNetH5Options().root(root));
//
// Contract: write_synthetic_shapes and ensure_synthetic_shapes throw
// dtrain::Error for bad options or a build without HDF5, and
// dtrain::IOError naming the directory when it cannot be written or holds
// something else. They never leave a half-written dataset at `root`: the
// files go into a temporary directory beside it (".<name>.tmp-<pid>-<n>"),
// renamed to `root` when complete. A run killed midway leaves only that
// temporary directory, which can be deleted.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/arg.h>

#include "dtrain/datasets/point_clouds.h"
#include "dtrain/datasets/shapenet_part.h"
#include "dtrain/datasets/split.h"

namespace dtrain::datasets {

// The names of every kind of shape, in label order; num_classes takes the
// first num_classes of them.
const std::vector<std::string>& synthetic_shape_names();

struct SyntheticShapesOptions {
  // How many kinds of shape, from 1 to synthetic_shape_names().size().
  TORCH_ARG(int64_t, num_classes) = 10;
  // Clouds of each class in each split (so every split is balanced).
  TORCH_ARG(int64_t, train_per_class) = 100;
  TORCH_ARG(int64_t, test_per_class) = 25;
  // Points of each cloud (ModelNet's HDF5 files hold 2048).
  TORCH_ARG(int64_t, points_per_cloud) = 1024;
  TORCH_ARG(uint64_t, seed) = 0;
  // Clouds per .h5 file, like ModelNet's ply_data_train0.h5, ply_data_train1.h5, ...
  TORCH_ARG(int64_t, shapes_per_file) = 2048;
};

// Every part of every kind of shape, "cube/top", in part-label order: the
// parts of each kind are consecutive, the kinds in label order, so a
// dataset of k classes uses a prefix of them.
const std::vector<std::string>& synthetic_part_names();

// One split in memory, the same tensors that write_synthetic_shapes writes
// (normals included). Needs no HDF5. Throws dtrain::Error for bad options.
LabeledClouds generate_synthetic_shapes(Split split, const SyntheticShapesOptions& options = {});

// The same clouds with every point's part (synthetic_part_names()), as
// load_shapenet_part_h5 reads them from the written files.
LabeledParts generate_synthetic_parts(Split split, const SyntheticShapesOptions& options = {});

// Writes both splits into `root`, which must not exist yet or be an empty
// directory (its parent is created when missing): the .h5 files; ModelNet's train_files.txt,
// test_files.txt and shape_names.txt; ShapeNet-Part's
// train_hdf5_file_list.txt, an empty val_hdf5_file_list.txt,
// test_hdf5_file_list.txt and all_object_categories.txt; part_names.txt
// (synthetic_part_names(), for people); and synthetic_shapes.txt, the
// options used.
void write_synthetic_shapes(const std::string& root, const SyntheticShapesOptions& options = {});

// Returns `root` once it holds the dataset of these options: at once when
// it already does, else after writing it. Throws when `root` holds a
// dataset of other options (naming the first that differs) or something
// that is not a synthetic-shapes dataset. Several processes or threads may
// call it on one root at the same time (the ranks of a job): each writes
// its own temporary directory, the first rename wins, and the others
// delete theirs and use the winner's.
std::string ensure_synthetic_shapes(const std::string& root,
                                    const SyntheticShapesOptions& options = {});

// Where the dataset of these options lives unless told otherwise:
// <base>/synthetic_shapes-v<generator>-c<classes>-tr<train>-te<test>-p<points>-s<seed>-f<per file>
// with <base> $DTRAIN_DATA_DIR when set, else $XDG_CACHE_HOME/dtrain/datasets,
// else $HOME/.cache/dtrain/datasets. One directory per set of options, so
// changing an option never collides with a dataset made earlier.
std::string synthetic_shapes_default_root(const SyntheticShapesOptions& options = {});

}  // namespace dtrain::datasets
