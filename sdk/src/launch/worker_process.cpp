#include "dtrain/launch/worker_process.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "dtrain/util/errors.h"

namespace dtrain::launch {

namespace {

bool is_executable_file(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec) && ::access(path.c_str(), X_OK) == 0;
}

void close_quietly(int& fd) {
  if (fd >= 0) {
    ::close(fd);
    fd = -1;
  }
}

// Only async-signal-safe calls between fork and exec: the launcher has threads.
[[noreturn]] void exec_child(pid_t parent, const char* path, char* const* argv, char* const* envp,
                             int out_fd, int err_fd) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) {  // the launcher died before prctl took effect
    ::_exit(127);
  }
  // The launcher's signal dispositions and mask must not leak into the
  // worker. Defaults first, then unblock: a SIGTERM sent to the group since
  // the fork (blocked by the parent around it) now ends the worker, instead
  // of running the launcher's handler in it and being lost.
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP}) {
    ::signal(sig, SIG_DFL);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::dup2(out_fd, STDOUT_FILENO);
  ::dup2(err_fd, STDERR_FILENO);
  // Nothing else of the launcher's (store sockets, other workers' pipes) stays open.
#ifdef SYS_close_range
  if (::syscall(SYS_close_range, 3u, ~0u, 0u) != 0)
#endif
  {
    for (int fd = 3; fd < 4096; ++fd) {
      ::close(fd);
    }
  }
  ::execve(path, argv, envp);
  const char* reason = std::strerror(errno);
  const char prefix[] = "dtrun: cannot execute ";
  [[maybe_unused]] ssize_t ignored = ::write(STDERR_FILENO, prefix, sizeof(prefix) - 1);
  ignored = ::write(STDERR_FILENO, path, std::strlen(path));
  ignored = ::write(STDERR_FILENO, ": ", 2);
  ignored = ::write(STDERR_FILENO, reason, std::strlen(reason));
  ignored = ::write(STDERR_FILENO, "\n", 1);
  ::_exit(127);
}

std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  pointers.reserve(strings.size() + 1);
  for (const auto& s : strings) {
    pointers.push_back(const_cast<char*>(s.c_str()));
  }
  pointers.push_back(nullptr);
  return pointers;
}

}  // namespace

void become_subreaper() {
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
}

int kill_orphans() {
  const pid_t self = ::getpid();
  int killed = 0;
  // A killed orphan's own children are reparented to us in turn: repeat
  // until a pass finds none (bounded, in case something keeps forking).
  for (int pass = 0; pass < 10; ++pass) {
    int found = 0;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
      const std::string name = entry.path().filename().string();
      if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) {
        continue;
      }
      std::ifstream stat(entry.path() / "stat");
      std::string text;
      std::getline(stat, text);
      // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
      const auto close = text.rfind(')');
      if (close == std::string::npos) {
        continue;
      }
      std::istringstream rest(text.substr(close + 1));
      char state = 0;
      pid_t ppid = 0;
      rest >> state >> ppid;
      if (ppid == self && state != 'Z') {  // zombies are only reaped
        ::kill(std::stoi(name), SIGKILL);
        ++found;
      }
    }
    int status = 0;
    while (::waitpid(-1, &status, WNOHANG) > 0) {
    }
    if (found == 0) {
      break;
    }
    killed += found;
    ::usleep(10000);
  }
  int status = 0;
  while (::waitpid(-1, &status, WNOHANG) > 0) {
  }
  return killed;
}

std::string resolve_program(const std::string& name) {
  DTRAIN_CHECK(!name.empty(), "the program name is empty");
  if (name.find('/') != std::string::npos) {
    DTRAIN_CHECK(is_executable_file(name), "program '", name,
                 "' does not exist or is not executable");
    return name;
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const std::size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string dir = dirs.substr(start, end - start);
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (is_executable_file(candidate)) {
      return candidate;
    }
    start = end + 1;
  }
  throw Error("program '" + name + "' was not found on PATH");
}

WorkerProcess::WorkerProcess(const std::string& path, const std::vector<std::string>& argv,
                             const std::vector<std::string>& envp) {
  int out[2];
  int err[2];
  DTRAIN_CHECK(::pipe2(out, O_CLOEXEC) == 0, "dtrun: pipe failed: ", std::strerror(errno));
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    throw Error(std::string("dtrun: pipe failed: ") + std::strerror(errno));
  }
  std::vector<char*> c_argv = c_strings(argv);
  std::vector<char*> c_envp = c_strings(envp);
  const pid_t parent = ::getpid();
  sigset_t stopping;
  sigset_t saved;
  sigemptyset(&stopping);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    sigaddset(&stopping, sig);
  }
  ::pthread_sigmask(SIG_BLOCK, &stopping, &saved);
  const pid_t pid = ::fork();
  if (pid == 0) {
    exec_child(parent, path.c_str(), c_argv.data(), c_envp.data(), out[1], err[1]);
  }
  ::pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  ::close(out[1]);
  ::close(err[1]);
  if (pid < 0) {
    ::close(out[0]);
    ::close(err[0]);
    throw Error(std::string("dtrun: fork failed: ") + std::strerror(errno));
  }
  // Also from the parent, so a signal sent before the child ran setpgid finds the group.
  ::setpgid(pid, pid);
  pid_ = pid;
  stdout_fd_ = out[0];
  stderr_fd_ = err[0];
#ifdef SYS_pidfd_open
  exit_fd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#endif
}

WorkerProcess::~WorkerProcess() {
  if (running() && pid_ > 0) {
    signal_group(SIGKILL);
    int wait_status = 0;
    while (::waitpid(pid_, &wait_status, 0) < 0 && errno == EINTR) {
    }
  }
  close_quietly(stdout_fd_);
  close_quietly(stderr_fd_);
  close_quietly(exit_fd_);
}

int WorkerProcess::take_stdout_fd() {
  const int fd = stdout_fd_;
  stdout_fd_ = -1;
  return fd;
}

int WorkerProcess::take_stderr_fd() {
  const int fd = stderr_fd_;
  stderr_fd_ = -1;
  return fd;
}

std::optional<util::ExitStatus> WorkerProcess::poll() {
  if (!running()) {
    return status_;
  }
  // See Note [No orphans]: look without reaping, kill the group, then reap.
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0 ||
      info.si_pid == 0) {
    return std::nullopt;
  }
  ::kill(-pid_, SIGKILL);
  int wait_status = 0;
  while (::waitpid(pid_, &wait_status, 0) < 0 && errno == EINTR) {
  }
  status_ = util::exit_status_from_wait(wait_status);
  close_quietly(exit_fd_);  // it would stay readable, and wake every poll
  return status_;
}

void WorkerProcess::signal_group(int sig) {
  if (running() && pid_ > 0) {
    ::kill(-pid_, sig);
  }
}

}  // namespace dtrain::launch
