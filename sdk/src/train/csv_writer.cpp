#include "dtrain/train/csv_writer.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "dtrain/util/errors.h"

namespace dtrain::train {

std::string csv_escape(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) {
    return text;
  }
  std::string quoted = "\"";
  for (char c : text) {
    quoted += c;
    if (c == '"') {
      quoted += '"';
    }
  }
  return quoted + "\"";
}

namespace {

std::string format_cell(const CsvWriter::Cell& cell) {
  struct Formatter {
    std::string operator()(std::int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const { return fmt::format("{:.6g}", v); }
    std::string operator()(const std::string& v) const { return csv_escape(v); }
  };
  return std::visit(Formatter{}, cell);
}

std::string join_row(const std::vector<std::string>& cells) {
  std::string line;
  for (size_t i = 0; i < cells.size(); ++i) {
    line += (i == 0 ? "" : ",") + cells[i];
  }
  return line + "\n";
}

bool ends_with_newline(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in || in.tellg() == 0) {
    return true;
  }
  in.seekg(-1, std::ios::end);
  return in.get() == '\n';
}

}  // namespace

CsvWriter::CsvWriter(std::string path, std::vector<std::string> columns, Mode mode)
    : path_(std::move(path)), columns_(std::move(columns)) {
  DTRAIN_CHECK(!columns_.empty(), "CsvWriter: a report needs at least one column (", path_, ")");
  std::filesystem::path file(path_);
  std::error_code ec;
  if (file.has_parent_path()) {
    std::filesystem::create_directories(file.parent_path(), ec);
    DTRAIN_CHECK_AS(IOError, !ec, "cannot create directory '", file.parent_path().string(),
                    "' for CSV report: ", ec.message());
  }
  std::vector<std::string> header_cells;
  for (const auto& column : columns_) {
    header_cells.push_back(csv_escape(column));
  }
  const std::string header = join_row(header_cells);
  bool append = false;
  if (mode == Mode::kAppend && std::filesystem::file_size(file, ec) > 0 && !ec) {
    std::ifstream existing(path_);
    std::string first_line;
    std::getline(existing, first_line);
    DTRAIN_CHECK_AS(IOError, first_line + "\n" == header, "CSV report '", path_,
                    "' exists with other columns (", first_line,
                    "), so rows cannot be added to it; expected ",
                    header.substr(0, header.size() - 1), ". Move it away or name another report");
    append = true;
  }
  out_.open(path_, append ? std::ios::out | std::ios::app : std::ios::out | std::ios::trunc);
  DTRAIN_CHECK_AS(IOError, out_.is_open(), "cannot open CSV report '", path_,
                  "' for writing: ", std::strerror(errno));
  if (!append) {
    out_ << header << std::flush;
  } else if (!ends_with_newline(path_)) {
    // A run that died in the middle of a row: the next row starts on a line
    // of its own.
    out_ << "\n" << std::flush;
  }
}

void CsvWriter::write_row(const std::vector<Cell>& cells) {
  DTRAIN_CHECK(cells.size() == columns_.size(), "CSV report '", path_, "': row has ", cells.size(),
               " cells but the header has ", columns_.size(), " columns");
  std::vector<std::string> text;
  text.reserve(cells.size());
  for (const auto& cell : cells) {
    text.push_back(format_cell(cell));
  }
  out_ << join_row(text) << std::flush;
  DTRAIN_CHECK_AS(IOError, out_.good(), "writing CSV report '", path_, "' failed");
}

}  // namespace dtrain::train
