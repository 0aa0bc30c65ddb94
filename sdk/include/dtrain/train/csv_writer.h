// A CSV report written one row at a time.
//
//   CsvWriter csv("out/epochs.csv", {"epoch", "loss", "accuracy"});
//   csv.write_row({1, 0.52, 0.81});
//
// The header is written when the file is created; each row is written whole
// and flushed, so a report cut short by a crash holds only complete rows.
// Creates missing parent directories. Not thread-safe.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <variant>
#include <vector>

namespace dtrain::train {

class CsvWriter {
 public:
  using Cell = std::variant<std::int64_t, double, std::string>;

  enum class Mode {
    kCreate,  // start the file afresh (an existing one is replaced)
    // Add rows to an existing report with the same header (a resumed run);
    // create it when missing or empty.
    kAppend,
  };

  // Throws dtrain::IOError naming the path when it cannot be created, or,
  // in kAppend mode, when the file exists with another header.
  CsvWriter(std::string path, std::vector<std::string> columns, Mode mode = Mode::kCreate);

  // Throws dtrain::Error when the row's length differs from the header's.
  void write_row(const std::vector<Cell>& cells);

  const std::string& path() const { return path_; }
  const std::vector<std::string>& columns() const { return columns_; }

 private:
  std::string path_;
  std::vector<std::string> columns_;
  std::ofstream out_;
};

// Quotes a cell when it holds a comma, a quote or a newline (RFC 4180).
std::string csv_escape(const std::string& text);

}  // namespace dtrain::train
