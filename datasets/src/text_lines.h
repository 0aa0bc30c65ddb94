// The small text files of the point-cloud layouts: file lists, class names
// and the synthetic shapes' record of options. One entry a line.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace dtrain::datasets {

// The file's lines without trailing white space ("\r" of files written on
// Windows included), empty lines left out. Throws dtrain::IOError naming
// the file when it is missing or unreadable; `what` says what the file is
// for ("the list of training files").
std::vector<std::string> read_text_lines(const std::filesystem::path& path, const char* what);

// Writes each line followed by "\n"; throws dtrain::IOError naming the file.
void write_text_lines(const std::filesystem::path& path, const std::vector<std::string>& lines);

}  // namespace dtrain::datasets
