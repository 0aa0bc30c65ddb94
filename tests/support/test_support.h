// Helpers shared by dtrain's tests: temporary directories, environment
// variables, IDX files written from C++, running a program to inspect its
// exit and output, and the training apps' small synthetic runs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dtrain::testing {

// The seed that every test of a program on LibTorch starts LibTorch's
// default CPU generator at (seed_each_test.cpp).
constexpr std::uint64_t kTestSeed = 20261204;

// What a program on LibTorch prints when every test of its run skipped, the
// line CTest reads to show the run as skipped (all_skipped.cpp,
// cmake/GTestSuites.cmake).
constexpr const char* kAllSkippedLine = "dtrain-tests: every test of this run was skipped";

// A fresh directory under the system temp dir, removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// Sets environment variables (unsets them for nullptr) for one scope and
// puts the old values back, latest first.
class ScopedEnv {
 public:
  ScopedEnv() = default;
  ScopedEnv(const char* name, const char* value) { set(name, value); }
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

  void set(const char* name, const char* value);

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// How a forked child ended: its wait status and what it wrote to stderr.
struct ChildEnd {
  int status = 0;
  std::string stderr_text;
};

// Runs `body` in a forked child whose stderr is a pipe; the child exits 0
// when `body` returns true, 1 when it returns false. For what changes a
// whole process (signal handlers, malloc settings) or ends it.
ChildEnd run_in_child(const std::function<bool()>& body);

// The file of the loaded object (library or program) that holds a code
// address, or "" for none.
std::string library_file_of(const void* address);

// The bytes of an IDX file holding uint8 data of `shape` (type code 0x08).
std::vector<unsigned char> idx_bytes_u8(const std::vector<uint32_t>& shape,
                                        const std::vector<unsigned char>& data);
// Writes bytes to a file, gzip-compressed when gzip is true.
void write_file(const std::string& path, const std::vector<unsigned char>& bytes,
                bool gzip = false);

struct ProcessResult {
  int exit_code = -1;  // 128 + signal when killed by a signal
  std::string output;  // stdout and stderr together
};

// Runs argv[0] with the rest as arguments (no shell interpretation) and waits.
ProcessResult run_process(const std::vector<std::string>& argv);

// Expects `result` to be a program's one-line error: exit status
// `exit_code`, and the whole output one line starting "<program>: error: "
// and containing `fragment` (what dtrain::util::run_cli_app prints).
void expect_one_line_error(const ProcessResult& result, int exit_code, const std::string& program,
                           const std::string& fragment);

// Lines of text without empty ones.
std::vector<std::string> non_empty_lines(const std::string& text);

// Arguments for a PointNet++ training app (train_pointnet2, train_partseg)
// that make a run of seconds: the synthetic shapes in data_dir, 3 kinds of
// shape with 16 training and 8 test clouds each, 256 points, ssg-lite,
// batch 8, one thread, the report at csv.
std::vector<std::string> small_synthetic_run(const std::string& data_dir, const std::string& csv);

// A tiny CIFAR-10 (binary version) the toy CNN learns in a few epochs:
// class c's images are a colour of its own (red, green and blue each at one
// of three levels, 40, 128 or 215) with uniform noise of +-40 on every
// value (staying inside 0-255). Five training
// files of `per_file` images and a test file of `test` images, labels
// cycling through 0..9; test_batch.bin is left out when `test` is 0.
void write_tiny_cifar10(const std::filesystem::path& dir, int per_file = 200, int test = 100);

// The rows of a CSV file without quoted cells (the training reports), each
// split at its commas; the header is row 0. Empty when the file is missing.
std::vector<std::vector<std::string>> read_csv(const std::string& path);

// Whether `path` is a PNG file (its signature).
bool is_png(const std::string& path);

// An app's run that reported to `csv` drew its curves beside it (csv's name
// with .png), or, where the Python it draws with lacks matplotlib, said so in
// one warning line of its `output`.
void expect_curves_beside(const std::string& csv, const std::string& output);

// The vector builds of the CPU kernels' loops (kernels/src/cpu/vector_build.h)
// that this CPU runs, as their variables name them: "baseline", then "avx2"
// and "avx512" where the CPU has them.
std::vector<std::string> cpu_vector_builds();

}  // namespace dtrain::testing
