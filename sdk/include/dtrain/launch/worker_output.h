// Where workers' output goes: the launcher reads every worker's stdout and
// stderr from pipes and passes each chunk on to the console (unless
// redirected or filtered out), to the worker's log file (when asked), and
// into a short in-memory tail kept for the failure summary.
//
// Lines keep their order within a stream; with a prefix ("[3]:") each
// line is marked with the global rank that wrote it. Single-threaded: the
// agent's monitor loop calls pump() between its other checks.
#pragma once

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dtrain::launch {

struct StreamRoute {
  bool console = true;
  bool file = false;
};

class WorkerOutput {
 public:
  // wake_fd (or -1): a descriptor whose readability ends a pump() early,
  // e.g. the read end of a self-pipe written by a signal handler.
  explicit WorkerOutput(int wake_fd = -1) : wake_fd_(wake_fd) {}
  ~WorkerOutput();
  WorkerOutput(const WorkerOutput&) = delete;
  WorkerOutput& operator=(const WorkerOutput&) = delete;

  // Takes ownership of the two pipe read ends of worker `rank`. log_path
  // is opened (created, truncated) when either route writes to a file.
  void add(int rank, int out_fd, int err_fd, StreamRoute out, StreamRoute err,
           const std::string& log_path, const std::string& prefix);
  // Waits up to `timeout` for output, forwarding whatever arrives. Returns
  // true when one of `exit_fds` (see WorkerProcess::exit_fd) became readable.
  bool pump(std::chrono::milliseconds timeout, const std::vector<int>& exit_fds = {});
  // Forwards until every pipe is at end of file, or `timeout` passed.
  void drain(std::chrono::milliseconds timeout);
  // The same for worker `rank`'s pipes only (others' output passes on meanwhile).
  void drain_rank(int rank, std::chrono::milliseconds timeout);
  // The last `lines` lines worker `rank` wrote (both streams), "" if none.
  std::string tail(int rank, int lines) const;
  // Closes every pipe and log file.
  void clear();

 private:
  struct Stream {
    int fd = -1;
    int rank = 0;
    int console_fd = -1;  // 1, 2, or -1 for none
    bool to_file = false;
    bool at_line_start = true;
  };
  bool read_once(Stream& stream);
  void forward(Stream& stream, const char* data, std::size_t size);

  int wake_fd_;
  std::vector<Stream> streams_;
  std::map<int, std::string> prefixes_;
  std::map<int, std::FILE*> files_;
  std::map<int, std::string> tails_;
};

}  // namespace dtrain::launch
