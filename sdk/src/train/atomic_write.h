// Internal: a file that is either its old contents or the whole new ones,
// for checkpoints and exported weights.
#pragma once

#include <string>

namespace dtrain::train::detail {

// Writes `bytes` to a temporary file beside `path` (creating the folder),
// flushes it to disk and renames it over `path`. Throws dtrain::IOError
// naming `what` and the path ("cannot write checkpoint 'out/run.pt': ...");
// the temporary file is removed and `path` keeps what it held.
void write_atomically(const std::string& path, const std::string& bytes, const std::string& what);

// Throws dtrain::IOError naming `what` and the path unless
// write_atomically can write there: `path` is not a directory and its
// folder exists (it is created when missing) and is writable. For a run to
// call before its first step, so a bad path fails in seconds.
void check_writable(const std::string& path, const std::string& what);

}  // namespace dtrain::train::detail
