#include "plots.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <spdlog/spdlog.h>

extern char** environ;

namespace dtrain::apps {

namespace fs = std::filesystem;

namespace {

// What plot_report.py exits with when it cannot import matplotlib.
constexpr int kMissingMatplotlib = 3;

std::string env_or(const char* name, const std::string& otherwise) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::string(value) : otherwise;
}

std::string python() {
  const std::string configured = DTRAIN_APPS_PYTHON;
  std::error_code ec;
  return env_or("DTRAIN_PYTHON",
                !configured.empty() && fs::exists(configured, ec) ? configured : "python3");
}

std::string script() {
  std::error_code ec;
  const fs::path installed = fs::read_symlink("/proc/self/exe", ec).parent_path().parent_path() /
                             "share" / "dtrain" / "plot_report.py";
  if (!ec && fs::is_regular_file(installed, ec)) {
    return env_or("DTRAIN_PLOT_SCRIPT", installed.string());
  }
  return env_or("DTRAIN_PLOT_SCRIPT", DTRAIN_APPS_PLOT_SCRIPT);
}

// One line in the log for the first picture a process could not draw; the
// later ones would only repeat it.
void say_once(const std::string& line) {
  static std::atomic<bool> said{false};
  if (!said.exchange(true)) {
    spdlog::warn("{}", line);
  }
}

std::string last_line(const std::string& text) {
  std::istringstream in(text);
  std::string last;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) {
      last = line;
    }
  }
  return last;
}

}  // namespace

std::string picture_beside(const std::string& csv) {
  return fs::path(csv).replace_extension(".png").string();
}

Drawing::Drawing(const std::string& kind, const std::string& csv, const std::string& png)
    : png_(png) {
  // The child's output, read back only when it drew nothing ($TMPDIR or /tmp).
  std::error_code ec;
  std::string output_template = (fs::temp_directory_path(ec) / "dtrain-plot-XXXXXX").string();
  const int fd = ::mkstemp(output_template.data());
  if (fd < 0) {
    say_once("no PNG pictures: cannot make a temporary file: " + std::string(std::strerror(errno)));
    return;
  }
  output_ = output_template;
  const std::vector<std::string> args{python(), script(), kind, csv, png};
  std::vector<char*> argv;
  for (const std::string& arg : args) {
    argv.push_back(const_cast<char*>(arg.c_str()));
  }
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fd, STDERR_FILENO);
  const int error = ::posix_spawnp(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fd);
  if (error != 0) {
    pid_ = -1;
    say_once("no PNG pictures: cannot run " + args[0] + ": " + std::strerror(error) +
             " (set DTRAIN_PYTHON to a Python with matplotlib)");
  }
}

Drawing::~Drawing() {
  wait();
  if (!output_.empty()) {
    std::error_code ignored;
    fs::remove(output_, ignored);
  }
}

bool Drawing::done() {
  if (pid_ < 0) {
    return true;
  }
  int status = 0;
  const pid_t got = ::waitpid(pid_, &status, WNOHANG);
  if (got == 0) {
    return false;
  }
  ended(got == pid_ ? status : -1);
  return true;
}

void Drawing::wait() {
  if (pid_ < 0) {
    return;
  }
  int status = 0;
  pid_t got = 0;
  do {
    got = ::waitpid(pid_, &status, 0);
  } while (got < 0 && errno == EINTR);
  ended(got == pid_ ? status : -1);
}

void Drawing::ended(int status) {
  const std::string program = python();
  pid_ = -1;
  if (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    return;
  }
  std::ifstream in(output_);
  std::stringstream text;
  text << in.rdbuf();
  if (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == kMissingMatplotlib) {
    say_once("no PNG pictures: matplotlib is not installed for " + program +
             " (pip install matplotlib there, or set DTRAIN_PYTHON to a Python that has it); "
             "the CSV reports hold the numbers");
    return;
  }
  const std::string said = last_line(text.str());
  say_once("could not draw " + png_ + ": " +
           (!said.empty() ? said
            : status != -1 && WIFEXITED(status)
                ? program + " exited with status " + std::to_string(WEXITSTATUS(status))
                : program + " did not finish"));
}

void TrainingCurves::update(const std::string& csv) {
  if (running_ && !running_->done()) {
    pending_ = csv;  // drawn once the running one ends
    return;
  }
  start(csv);
}

void TrainingCurves::finish() {
  if (running_) {
    running_->wait();
  }
  if (!pending_.empty()) {
    start(pending_);
    running_->wait();
  }
  running_.reset();
}

void TrainingCurves::start(std::string csv) {
  pending_.clear();
  running_.reset();
  running_ = std::make_unique<Drawing>("curves", csv, picture_beside(csv));
}

void draw_now(const std::string& kind, const std::string& csv, const std::string& png) {
  Drawing(kind, csv, png).wait();
}

}  // namespace dtrain::apps
