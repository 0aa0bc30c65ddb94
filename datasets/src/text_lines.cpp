#include "text_lines.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "dtrain/util/errors.h"

namespace dtrain::datasets {

std::vector<std::string> read_text_lines(const std::filesystem::path& path, const char* what) {
  std::error_code ec;
  DTRAIN_CHECK_AS(IOError, std::filesystem::is_regular_file(path, ec), "'", path.string(), "' (",
                  what, ") does not exist");
  std::ifstream in(path);
  DTRAIN_CHECK_AS(IOError, in.is_open(), "cannot open '", path.string(), "' (", what,
                  "): ", std::strerror(errno));
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    const auto end = line.find_last_not_of(" \t\r\n");
    if (end != std::string::npos) {
      lines.push_back(line.substr(0, end + 1));
    }
  }
  DTRAIN_CHECK_AS(IOError, !in.bad(), "cannot read '", path.string(), "' (", what, ")");
  return lines;
}

void write_text_lines(const std::filesystem::path& path, const std::vector<std::string>& lines) {
  std::ofstream out(path, std::ios::trunc);
  DTRAIN_CHECK_AS(IOError, out.is_open(), "cannot create '", path.string(),
                  "': ", std::strerror(errno));
  for (const std::string& line : lines) {
    out << line << '\n';
  }
  out.close();
  DTRAIN_CHECK_AS(IOError, !out.fail(), "cannot write '", path.string(), "'");
}

}  // namespace dtrain::datasets
