// Text clouds (point_cloud_file.h), and what every reader checks of a
// cloud once read.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "dtrain/datasets/point_cloud_file.h"
#include "dtrain/util/errors.h"
#include "point_cloud_file_checks.h"

namespace dtrain::datasets {

namespace {

// The cells of one line, split at spaces, tabs and commas.
std::vector<std::string> cells_of(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  for (const char c : line) {
    if (c == ' ' || c == '\t' || c == ',' || c == '\r') {
      if (!cell.empty()) {
        cells.push_back(std::move(cell));
        cell.clear();
      }
    } else {
      cell.push_back(c);
    }
  }
  if (!cell.empty()) {
    cells.push_back(std::move(cell));
  }
  return cells;
}

float number_of(const std::string& cell, const std::string& path, int64_t line) {
  char* end = nullptr;
  const float value = std::strtof(cell.c_str(), &end);
  DTRAIN_CHECK_AS(IOError, end != cell.c_str() && *end == '\0', "'", path, "' line ", line, ": '",
                  cell, "' is not a number");
  return value;
}

}  // namespace

namespace detail {

at::Tensor checked_cloud(std::vector<float> values, int64_t columns, const std::string& path) {
  DTRAIN_CHECK_AS(IOError, !values.empty(), "'", path, "' holds no points");
  for (std::size_t i = 0; i < values.size(); ++i) {
    DTRAIN_CHECK_AS(IOError, std::isfinite(values[i]), "'", path, "': point ",
                    i / static_cast<std::size_t>(columns) + 1,
                    " has a value that is not a finite number (", values[i], ")");
  }
  const auto points = static_cast<int64_t>(values.size()) / columns;
  return at::tensor(values, at::kFloat).reshape({points, columns});
}

}  // namespace detail

at::Tensor read_text_cloud(const std::string& path) {
  std::ifstream in(path);
  DTRAIN_CHECK_AS(IOError, in.good(), "cannot open point cloud '", path, "'");
  std::vector<float> values;
  int64_t columns = 0;     // of the first point's line: 3, or 6 with normals
  int64_t first_line = 0;  // its number
  int64_t number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    const std::vector<std::string> cells = cells_of(line);
    if (cells.empty() || cells[0][0] == '#') {
      continue;
    }
    const auto given = static_cast<int64_t>(cells.size());
    DTRAIN_CHECK_AS(IOError, given >= 3, "'", path, "' line ", number, " has ", given,
                    " column(s); a point needs x y z");
    if (columns == 0) {
      columns = given >= 6 ? 6 : 3;
      first_line = number;
    }
    DTRAIN_CHECK_AS(IOError, given >= columns, "'", path, "' line ", number, " has ", given,
                    " columns; line ", first_line, " has ", columns, " (x y z nx ny nz)");
    for (int64_t c = 0; c < columns; ++c) {
      values.push_back(number_of(cells[static_cast<std::size_t>(c)], path, number));
    }
  }
  return detail::checked_cloud(std::move(values), columns == 0 ? 3 : columns, path);
}

at::Tensor read_point_cloud_file(const std::string& path) {
  std::ifstream in(path);
  DTRAIN_CHECK_AS(IOError, in.good(), "cannot open point cloud '", path, "'");
  std::string first;
  std::getline(in, first);
  if (!first.empty() && first.back() == '\r') {
    first.pop_back();
  }
  return first == "ply" ? read_ply_cloud(path) : read_text_cloud(path);
}

}  // namespace dtrain::datasets
