// PLY clouds (point_cloud_file.h): a strict reader of the header and of
// the vertex element, in ascii or binary of either byte order.
#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "dtrain/datasets/point_cloud_file.h"
#include "dtrain/util/errors.h"
#include "point_cloud_file_checks.h"

namespace dtrain::datasets {

namespace {

enum class PlyFormat { kAscii, kLittleEndian, kBigEndian };

struct PlyProperty {
  std::string name;
  std::string type;
  int size = 0;  // bytes in binary files
};

struct PlyHeader {
  PlyFormat format = PlyFormat::kAscii;
  int64_t vertices = 0;
  std::vector<PlyProperty> properties;  // of the vertex element
};

// Bytes of each scalar type PLY names, under both of its spellings.
std::optional<int> type_size(const std::string& type) {
  static const std::map<std::string, int> sizes{
      {"char", 1},   {"int8", 1},    {"uchar", 1},  {"uint8", 1},  {"short", 2}, {"int16", 2},
      {"ushort", 2}, {"uint16", 2},  {"int", 4},    {"int32", 4},  {"uint", 4},  {"uint32", 4},
      {"float", 4},  {"float32", 4}, {"double", 8}, {"float64", 8}};
  const auto it = sizes.find(type);
  return it == sizes.end() ? std::nullopt : std::optional<int>(it->second);
}

[[noreturn]] void broken_header(const std::string& path, const std::string& what) {
  throw IOError(::dtrain::detail::concat("'", path, "': broken PLY header: ", what));
}

PlyFormat format_of(const std::string& word, const std::string& path) {
  if (word == "ascii") {
    return PlyFormat::kAscii;
  }
  if (word == "binary_little_endian") {
    return PlyFormat::kLittleEndian;
  }
  if (word == "binary_big_endian") {
    return PlyFormat::kBigEndian;
  }
  broken_header(path, "unknown format '" + word + "'");
}

// One header line after "ply": format, element, property, comment, obj_info.
void read_header_line(const std::string& line, const std::string& path, PlyHeader& header,
                      std::string& element) {
  std::istringstream words(line);
  std::string keyword;
  words >> keyword;
  if (keyword.empty() || keyword == "comment" || keyword == "obj_info") {
    return;
  }
  if (keyword == "format") {
    std::string word;
    words >> word;
    header.format = format_of(word, path);
  } else if (keyword == "element") {
    DTRAIN_CHECK_AS(IOError, element.empty() || element == "vertex" || header.vertices > 0, "'",
                    path, "': broken PLY header: element '", element, "' comes before 'vertex'");
    int64_t count = -1;
    words >> element >> count;
    if (element == "vertex") {
      DTRAIN_CHECK_AS(IOError, count >= 0, "'", path,
                      "': broken PLY header: the vertex element has no count");
      header.vertices = count;
    }
  } else if (keyword == "property") {
    if (element != "vertex") {
      return;  // of a later element (faces), not read
    }
    PlyProperty property;
    words >> property.type >> property.name;
    DTRAIN_CHECK_AS(IOError, property.type != "list", "'", path,
                    "': broken PLY header: the vertex element has a list property");
    const auto size = type_size(property.type);
    DTRAIN_CHECK_AS(IOError, size.has_value() && !property.name.empty(), "'", path,
                    "': broken PLY header: cannot read 'property ", property.type, " ",
                    property.name, "'");
    property.size = *size;
    header.properties.push_back(property);
  } else {
    broken_header(path, "unknown line '" + line + "'");
  }
}

PlyHeader read_header(std::istream& in, const std::string& path) {
  std::string line;
  std::getline(in, line);
  DTRAIN_CHECK_AS(IOError, line == "ply" || line == "ply\r", "'", path,
                  "': not a PLY file (its first line is not 'ply')");
  PlyHeader header;
  std::string element;
  bool has_format = false;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') {
      line.pop_back();
    }
    if (line == "end_header") {
      DTRAIN_CHECK_AS(IOError, has_format, "'", path, "': broken PLY header: no format line");
      return header;
    }
    has_format = has_format || line.starts_with("format ");
    read_header_line(line, path, header, element);
  }
  broken_header(path, "no end_header line");
}

// Where x y z (and nx ny nz, when all three are there) are among the properties.
std::vector<std::size_t> wanted_columns(const PlyHeader& header, const std::string& path) {
  auto find = [&](const char* name) -> std::optional<std::size_t> {
    for (std::size_t i = 0; i < header.properties.size(); ++i) {
      if (header.properties[i].name == name) {
        return i;
      }
    }
    return std::nullopt;
  };
  std::vector<std::size_t> columns;
  for (const char* name : {"x", "y", "z"}) {
    const auto at = find(name);
    DTRAIN_CHECK_AS(IOError, at.has_value(), "'", path,
                    "': broken PLY header: the vertex element has no property '", name, "'");
    columns.push_back(*at);
  }
  const auto nx = find("nx");
  const auto ny = find("ny");
  const auto nz = find("nz");
  if (nx && ny && nz) {
    columns.insert(columns.end(), {*nx, *ny, *nz});
  }
  return columns;
}

// One binary value of `type` as a double.
double binary_value(const char* bytes, const std::string& type, int size, bool swap) {
  char value[8];
  std::memcpy(value, bytes, static_cast<std::size_t>(size));
  if (swap) {
    std::reverse(value, value + size);
  }
  auto as = [&value]<typename T>(T) {
    T v;
    std::memcpy(&v, value, sizeof(T));
    return static_cast<double>(v);
  };
  if (type == "float" || type == "float32")
    return as(float{});
  if (type == "double" || type == "float64")
    return as(double{});
  if (type == "char" || type == "int8")
    return as(int8_t{});
  if (type == "uchar" || type == "uint8")
    return as(uint8_t{});
  if (type == "short" || type == "int16")
    return as(int16_t{});
  if (type == "ushort" || type == "uint16")
    return as(uint16_t{});
  if (type == "int" || type == "int32")
    return as(int32_t{});
  return as(uint32_t{});
}

std::vector<float> read_binary(std::istream& in, const PlyHeader& header,
                               const std::vector<std::size_t>& columns, const std::string& path) {
  std::vector<int> offsets;
  int stride = 0;
  for (const PlyProperty& property : header.properties) {
    offsets.push_back(stride);
    stride += property.size;
  }
  const bool swap =
      (header.format == PlyFormat::kBigEndian) != (std::endian::native == std::endian::big);
  std::vector<char> vertex(static_cast<std::size_t>(stride));
  std::vector<float> values;
  for (int64_t v = 0; v < header.vertices; ++v) {
    DTRAIN_CHECK_AS(IOError, in.read(vertex.data(), stride), "'", path, "' ends after ", v,
                    " of the ", header.vertices, " vertices its header announces");
    for (const std::size_t c : columns) {
      const PlyProperty& property = header.properties[c];
      values.push_back(static_cast<float>(
          binary_value(vertex.data() + offsets[c], property.type, property.size, swap)));
    }
  }
  return values;
}

std::vector<float> read_ascii(std::istream& in, const PlyHeader& header,
                              const std::vector<std::size_t>& columns, const std::string& path) {
  std::vector<float> values;
  std::vector<double> row(header.properties.size());
  for (int64_t v = 0; v < header.vertices; ++v) {
    std::string line;
    DTRAIN_CHECK_AS(IOError, static_cast<bool>(std::getline(in, line)), "'", path, "' ends after ",
                    v, " of the ", header.vertices, " vertices its header announces");
    std::istringstream cells(line);
    for (double& value : row) {
      DTRAIN_CHECK_AS(IOError, static_cast<bool>(cells >> value), "'", path, "': vertex ", v + 1,
                      " has fewer than the ", row.size(), " numbers its header announces");
    }
    for (const std::size_t c : columns) {
      values.push_back(static_cast<float>(row[c]));
    }
  }
  return values;
}

}  // namespace

at::Tensor read_ply_cloud(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  DTRAIN_CHECK_AS(IOError, in.good(), "cannot open point cloud '", path, "'");
  const PlyHeader header = read_header(in, path);
  const std::vector<std::size_t> columns = wanted_columns(header, path);
  std::vector<float> values = header.format == PlyFormat::kAscii
                                  ? read_ascii(in, header, columns, path)
                                  : read_binary(in, header, columns, path);
  return detail::checked_cloud(std::move(values), static_cast<int64_t>(columns.size()), path);
}

}  // namespace dtrain::datasets
