#include "test_support.h"

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

namespace dtrain::testing {

TempDir::TempDir() {
  std::random_device seed;
  std::mt19937_64 rng(seed());
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto candidate = std::filesystem::temp_directory_path() /
                     ("dtrain-test-" + std::to_string(getpid()) + "-" + std::to_string(rng()));
    if (std::filesystem::create_directory(candidate)) {
      path_ = candidate;
      return;
    }
  }
  throw std::runtime_error("TempDir: could not create a temporary directory");
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::vector<unsigned char> idx_bytes_u8(const std::vector<uint32_t>& shape,
                                        const std::vector<unsigned char>& data) {
  std::vector<unsigned char> bytes = {0, 0, 0x08, static_cast<unsigned char>(shape.size())};
  for (uint32_t dim : shape) {
    for (int shift = 24; shift >= 0; shift -= 8) {
      bytes.push_back(static_cast<unsigned char>(dim >> shift));
    }
  }
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

void write_file(const std::string& path, const std::vector<unsigned char>& bytes, bool gzip) {
  if (gzip) {
    gzFile file = gzopen(path.c_str(), "wb");
    if (file == nullptr || gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())) !=
                               static_cast<int>(bytes.size())) {
      throw std::runtime_error("write_file: cannot write " + path);
    }
    gzclose(file);
    return;
  }
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    throw std::runtime_error("write_file: cannot write " + path);
  }
}

ProcessResult run_process(const std::vector<std::string>& argv) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) {
    throw std::runtime_error("run_process: pipe failed");
  }
  const pid_t pid = fork();
  if (pid < 0) {
    throw std::runtime_error("run_process: fork failed");
  }
  if (pid == 0) {
    dup2(pipe_fds[1], STDOUT_FILENO);
    dup2(pipe_fds[1], STDERR_FILENO);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    std::vector<char*> args;
    for (const auto& arg : argv) {
      args.push_back(const_cast<char*>(arg.c_str()));
    }
    args.push_back(nullptr);
    execv(args[0], args.data());
    std::perror("execv");
    _exit(127);
  }
  close(pipe_fds[1]);
  ProcessResult result;
  std::array<char, 4096> buffer{};
  ssize_t n = 0;
  while ((n = read(pipe_fds[0], buffer.data(), buffer.size())) > 0) {
    result.output.append(buffer.data(), static_cast<size_t>(n));
  }
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

std::vector<std::string> non_empty_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) {
      lines.push_back(line);
    }
  }
  return lines;
}

void expect_one_line_error(const ProcessResult& result, int exit_code, const std::string& program,
                           const std::string& fragment) {
  EXPECT_EQ(result.exit_code, exit_code) << result.output;
  const auto lines = non_empty_lines(result.output);
  ASSERT_EQ(lines.size(), 1u) << result.output;
  EXPECT_EQ(lines[0].rfind(program + ": error: ", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find(fragment), std::string::npos) << lines[0];
}

void ScopedEnv::set(const char* name, const char* value) {
  const char* old = std::getenv(name);
  saved_.emplace_back(name, old != nullptr ? std::optional<std::string>(old) : std::nullopt);
  if (value != nullptr) {
    setenv(name, value, 1);
  } else {
    unsetenv(name);
  }
}

ScopedEnv::~ScopedEnv() {
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
    if (it->second) {
      setenv(it->first.c_str(), it->second->c_str(), 1);
    } else {
      unsetenv(it->first.c_str());
    }
  }
}

ChildEnd run_in_child(const std::function<bool()>& body) {
  int fds[2];
  if (pipe(fds) != 0) {
    throw std::runtime_error("run_in_child: pipe failed");
  }
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    close(fds[1]);
    _exit(body() ? 0 : 1);
  }
  close(fds[1]);
  ChildEnd end;
  char buffer[4096];
  for (ssize_t got; (got = read(fds[0], buffer, sizeof buffer)) > 0;) {
    end.stderr_text.append(buffer, static_cast<size_t>(got));
  }
  close(fds[0]);
  waitpid(pid, &end.status, 0);
  return end;
}

std::string library_file_of(const void* address) {
  Dl_info info{};
  if (address == nullptr || dladdr(address, &info) == 0 || info.dli_fname == nullptr) {
    return "";
  }
  return info.dli_fname;
}

void write_tiny_cifar10(const std::filesystem::path& dir, int per_file, int test) {
  static const int kColours[10][3] = {
      {215, 40, 40},  {40, 215, 40},   {40, 40, 215}, {215, 215, 40},  {215, 40, 215},
      {40, 215, 215}, {215, 215, 215}, {40, 40, 40},  {128, 128, 128}, {215, 128, 40}};
  std::mt19937 random(1);
  std::uniform_int_distribution<int> noise(-40, 40);
  int image = 0;
  auto write = [&](const std::string& name, int count) {
    std::vector<unsigned char> bytes;
    for (int i = 0; i < count; ++i, ++image) {
      const int label = image % 10;
      bytes.push_back(static_cast<unsigned char>(label));
      for (int channel = 0; channel < 3; ++channel) {
        for (int pixel = 0; pixel < 32 * 32; ++pixel) {
          bytes.push_back(static_cast<unsigned char>(kColours[label][channel] + noise(random)));
        }
      }
    }
    write_file((dir / name).string(), bytes);
  };
  for (int file = 1; file <= 5; ++file) {
    write("data_batch_" + std::to_string(file) + ".bin", per_file);
  }
  if (test > 0) {
    write("test_batch.bin", test);
  }
}

std::vector<std::string> small_synthetic_run(const std::string& data_dir, const std::string& csv) {
  return {"--data-dir",
          data_dir,
          "--synthetic-classes",
          "3",
          "--synthetic-train-per-class",
          "16",
          "--synthetic-test-per-class",
          "8",
          "--num-points",
          "256",
          "--model",
          "ssg-lite",
          "--batch-size",
          "8",
          "--threads",
          "1",
          "--csv",
          csv};
}

std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::istringstream fields(line);
    for (std::string cell; std::getline(fields, cell, ',');) {
      cells.push_back(cell);
    }
    rows.push_back(cells);
  }
  return rows;
}

std::vector<std::string> cpu_vector_builds() {
  std::vector<std::string> builds{"baseline"};
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2")) {
    builds.push_back("avx2");
  }
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")) {
    builds.push_back("avx512");
  }
#endif
  return builds;
}

bool is_png(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string head(8, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  return in.gcount() == 8 && head == "\x89PNG\r\n\x1a\n";
}

void expect_curves_beside(const std::string& csv, const std::string& output) {
  const std::string png = std::filesystem::path(csv).replace_extension(".png").string();
  if (output.find("matplotlib is not installed") != std::string::npos) {
    return;  // the one line said why; the run's own checks see it succeed
  }
  EXPECT_TRUE(is_png(png)) << png << " is not a PNG, and no line said why:\n" << output;
}

}  // namespace dtrain::testing
