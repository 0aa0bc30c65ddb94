#include "lockstep.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "dtrain/util/errors.h"

namespace dtrain::bench {
namespace {

std::vector<std::string> read_order(const std::string& dir) {
  std::ifstream in(dir + "/order");
  DTRAIN_CHECK_AS(IOError, in.good(), "lockstep: cannot read '", dir, "/order'");
  std::vector<std::string> order;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) {
      order.push_back(line);
    }
  }
  return order;
}

void write_round(const std::filesystem::path& fifo, int round) {
  const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
  DTRAIN_CHECK_AS(
      IOError, fd >= 0,
      fmt::format("lockstep: cannot open '{}': {}", fifo.string(), std::strerror(errno)));
  const std::string message = fmt::format("{}\n", round);
  const ssize_t written = ::write(fd, message.data(), message.size());
  ::close(fd);
  DTRAIN_CHECK_AS(IOError, written == static_cast<ssize_t>(message.size()),
                  "lockstep: short write to '", fifo.string(), "'");
}

}  // namespace

Lockstep::Lockstep(const std::string& spec, int rank, std::chrono::seconds timeout)
    : rank_(rank), timeout_(timeout) {
  if (spec.empty()) {
    return;
  }
  const auto colon = spec.rfind(':');
  DTRAIN_CHECK(colon != std::string::npos && colon > 0 && colon + 1 < spec.size(),
               "--lockstep must be DIR:NAME, got '", spec, "'");
  dir_ = spec.substr(0, colon);
  name_ = spec.substr(colon + 1);
  order_ = read_order(dir_);
  DTRAIN_CHECK(std::find(order_.begin(), order_.end(), name_) != order_.end(), "lockstep: '", name_,
               "' is not listed in '", dir_, "/order'");
  const std::string fifo = fmt::format("{}/{}.{}", dir_, name_, rank_);
  // Read-write: the open never blocks and never sees end-of-file.
  fifo_fd_ = ::open(fifo.c_str(), O_RDWR);
  DTRAIN_CHECK_AS(IOError, fifo_fd_ >= 0,
                  fmt::format("lockstep: cannot open '{}': {}", fifo, std::strerror(errno)));
}

Lockstep::~Lockstep() {
  if (fifo_fd_ >= 0) {
    ::close(fifo_fd_);
  }
}

void Lockstep::wait_turn(int round) {
  if (!active()) {
    return;
  }
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  while (line.empty() || line.back() != '\n') {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd request{fifo_fd_, POLLIN, 0};
    const int ready =
        ::poll(&request, 1, static_cast<int>(std::max<std::int64_t>(0, left.count())));
    if (ready < 0 && errno == EINTR) {
      continue;
    }
    DTRAIN_CHECK(ready > 0,
                 fmt::format("lockstep: '{}' rank {} got no turn for round {} within {} s; "
                             "another participant has probably failed",
                             name_, rank_, round, timeout_.count()));
    // One byte at a time: a FIFO may already hold the next message.
    char c = 0;
    if (::read(fifo_fd_, &c, 1) == 1) {
      line.push_back(c);
    }
  }
  const int got = std::stoi(line);
  DTRAIN_CHECK(got == round, "lockstep: '", name_, "' expected round ", round, ", got ", got);
}

void Lockstep::pass_turn(int round) {
  if (!active() || rank_ != 0) {
    return;
  }
  const auto self = std::find(order_.begin(), order_.end(), name_);
  const bool last = std::next(self) == order_.end();
  const std::string& next = last ? order_.front() : *std::next(self);
  const std::string prefix = next + ".";
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    const std::string file = entry.path().filename().string();
    const std::string rank = file.substr(std::min(prefix.size(), file.size()));
    if (file.starts_with(prefix) && !rank.empty() &&
        std::all_of(rank.begin(), rank.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      write_round(entry.path(), last ? round + 1 : round);
    }
  }
}

}  // namespace dtrain::bench
