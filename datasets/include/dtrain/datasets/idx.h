// Reader for the IDX format of MNIST and Fashion-MNIST, plain or gzipped.
//
// An IDX file is a 4-byte magic number (two zero bytes, a type code, the
// number of dimensions), one big-endian uint32 per dimension, then the
// elements in row-major order, big-endian.
#pragma once

#include <string>

#include <ATen/core/Tensor.h>

namespace dtrain::datasets {

// Reads the whole file into a CPU tensor of the file's shape and element
// type (uint8, int8, int16, int32, float32, float64). Files ending in .gz
// are decompressed (any file may be gzipped; zlib detects it).
//
// Throws dtrain::IOError naming the path and the problem when the file is
// missing or unreadable, the magic number is wrong, or the data is shorter
// than the header says (truncated download).
at::Tensor read_idx(const std::string& path);

}  // namespace dtrain::datasets
