#include "dtrain/launch/worker_output.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "dtrain/launch/failure.h"
#include "dtrain/util/errors.h"

namespace dtrain::launch {

namespace {

// Enough for the summary's last lines even when they are long.
constexpr std::size_t kTailBytes = 16 * 1024;

void write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return;  // a closed console is not the workers' problem
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

}  // namespace

WorkerOutput::~WorkerOutput() {
  clear();
}

void WorkerOutput::add(int rank, int out_fd, int err_fd, StreamRoute out, StreamRoute err,
                       const std::string& log_path, const std::string& prefix) {
  if ((out.file || err.file) && files_.find(rank) == files_.end()) {
    std::FILE* file = std::fopen(log_path.c_str(), "w");
    if (file == nullptr) {
      ::close(out_fd);
      ::close(err_fd);
      throw IOError("dtrun: cannot write the log file " + log_path + ": " + std::strerror(errno));
    }
    files_[rank] = file;
  }
  prefixes_[rank] = prefix;
  streams_.push_back({out_fd, rank, out.console ? STDOUT_FILENO : -1, out.file});
  streams_.push_back({err_fd, rank, err.console ? STDERR_FILENO : -1, err.file});
}

void WorkerOutput::forward(Stream& stream, const char* data, std::size_t size) {
  std::string& tail = tails_[stream.rank];
  tail.append(data, size);
  if (tail.size() > kTailBytes) {
    tail.erase(0, tail.size() - kTailBytes);
  }
  if (stream.to_file) {
    std::FILE* file = files_[stream.rank];
    std::fwrite(data, 1, size, file);
    std::fflush(file);  // the log must be complete even if the launcher is killed
  }
  if (stream.console_fd < 0) {
    return;
  }
  const std::string& prefix = prefixes_[stream.rank];
  if (prefix.empty()) {
    write_all(stream.console_fd, data, size);
    return;
  }
  std::string text;
  for (std::size_t i = 0; i < size; ++i) {
    if (stream.at_line_start) {
      text += prefix;
      stream.at_line_start = false;
    }
    text += data[i];
    if (data[i] == '\n') {
      stream.at_line_start = true;
    }
  }
  write_all(stream.console_fd, text.data(), text.size());
}

// Reads what one ready pipe holds; false at end of file.
bool WorkerOutput::read_once(Stream& stream) {
  char buffer[8192];
  const ssize_t n = ::read(stream.fd, buffer, sizeof(buffer));
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
    return true;
  }
  if (n <= 0) {
    return false;
  }
  forward(stream, buffer, static_cast<std::size_t>(n));
  return true;
}

bool WorkerOutput::pump(std::chrono::milliseconds timeout, const std::vector<int>& exit_fds) {
  std::vector<pollfd> fds;
  for (const Stream& stream : streams_) {
    fds.push_back({stream.fd, POLLIN, 0});
  }
  if (wake_fd_ >= 0) {
    fds.push_back({wake_fd_, POLLIN, 0});
  }
  const std::size_t first_exit_fd = fds.size();
  for (int fd : exit_fds) {
    if (fd >= 0) {
      fds.push_back({fd, POLLIN, 0});
    }
  }
  if (fds.empty()) {
    ::usleep(static_cast<useconds_t>(timeout.count() * 1000));
    return false;
  }
  if (::poll(fds.data(), fds.size(), static_cast<int>(timeout.count())) <= 0) {
    return false;
  }
  bool exited = false;
  for (std::size_t i = first_exit_fd; i < fds.size(); ++i) {
    exited = exited || fds[i].revents != 0;
  }
  std::vector<Stream> open;
  for (std::size_t i = 0; i < streams_.size(); ++i) {
    Stream& stream = streams_[i];
    if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) != 0 && !read_once(stream)) {
      ::close(stream.fd);
      continue;
    }
    open.push_back(stream);
  }
  streams_ = std::move(open);
  return exited;
}

void WorkerOutput::drain(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const int saved_wake = wake_fd_;
  wake_fd_ = -1;  // a pending signal must not cut the drain short
  while (!streams_.empty() && std::chrono::steady_clock::now() < deadline) {
    pump(std::chrono::milliseconds(50));
  }
  wake_fd_ = saved_wake;
}

void WorkerOutput::drain_rank(int rank, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto open = [&] {
    for (const Stream& stream : streams_) {
      if (stream.rank == rank) {
        return true;
      }
    }
    return false;
  };
  const int saved_wake = wake_fd_;
  wake_fd_ = -1;
  while (open() && std::chrono::steady_clock::now() < deadline) {
    pump(std::chrono::milliseconds(10));
  }
  wake_fd_ = saved_wake;
}

std::string WorkerOutput::tail(int rank, int lines) const {
  const auto it = tails_.find(rank);
  return it == tails_.end() ? std::string() : last_lines(it->second, lines);
}

void WorkerOutput::clear() {
  for (Stream& stream : streams_) {
    ::close(stream.fd);
  }
  streams_.clear();
  for (auto& [rank, file] : files_) {
    std::fclose(file);
  }
  files_.clear();
  prefixes_.clear();
  tails_.clear();
}

}  // namespace dtrain::launch
