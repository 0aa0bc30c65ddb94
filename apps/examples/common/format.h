// How the examples print tensors: the seed prints `tensor[0]` with Python's
// repr ("tensor(1.)"); the examples print the number itself ("1"), and a
// tensor or list of tensors as "[1, 2]". See apps/examples/README.md.
#pragma once

#include <string>
#include <vector>

#include <ATen/ATen.h>

namespace dtrain::examples {

// A one-element tensor as its number ("1", "2.5"); otherwise "[1, 2]".
std::string format_tensor(const at::Tensor& tensor);

// "[1, 2]": each tensor as format_tensor does.
std::string format_tensors(const std::vector<at::Tensor>& tensors);

// Writes one whole line to stdout and flushes, so lines of different ranks
// interleave but never mix.
void print_line(const std::string& line);

}  // namespace dtrain::examples
