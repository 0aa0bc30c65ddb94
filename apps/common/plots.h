// The apps' pictures: PNGs drawn from their CSV reports by
// apps/common/plot_report.py (matplotlib), run in a child process so that
// nothing of Python is loaded into the app. Python is $DTRAIN_PYTHON when
// set, else the one the build was configured with (the bootstrap's venv),
// else python3 on the PATH; the script is $DTRAIN_PLOT_SCRIPT when set, else
// the installed share/dtrain/plot_report.py beside the program's bin, else
// the source tree's. A picture that cannot be drawn (no Python, no
// matplotlib) costs one log line per process, never the run.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

namespace dtrain::apps {

// The picture beside a CSV report: out/train_pointnet2.csv -> out/train_pointnet2.png.
std::string picture_beside(const std::string& csv);

// One drawing in flight: plot_report.py <kind> <csv> <png>.
class Drawing {
 public:
  // Starts it; a drawing that cannot start is logged and done at once.
  Drawing(const std::string& kind, const std::string& csv, const std::string& png);
  ~Drawing();  // waits
  Drawing(const Drawing&) = delete;
  Drawing& operator=(const Drawing&) = delete;

  // Whether it has ended (without waiting).
  bool done();
  // Until it has ended; logs why when it drew nothing.
  void wait();

 private:
  void ended(int status);

  pid_t pid_ = -1;
  std::string output_;  // the child's stdout and stderr
  std::string png_;
};

// The training curves (loss, test scores and samples/s per epoch) beside a
// report, drawn again after each of its rows: at most one drawing at a
// time, the newest rows drawn once the one in flight ends, and the last
// drawn before the run ends (finish, or the destructor).
class TrainingCurves {
 public:
  TrainingCurves() = default;
  ~TrainingCurves() { finish(); }
  TrainingCurves(const TrainingCurves&) = delete;
  TrainingCurves& operator=(const TrainingCurves&) = delete;

  // After a row of `csv` was written (TrainerOptions::after_report_row).
  void update(const std::string& csv);
  // Until the picture holds every row written.
  void finish();

 private:
  void start(std::string csv);  // by value: it may be pending_, which it clears

  std::unique_ptr<Drawing> running_;
  std::string pending_;  // a report with rows the running drawing lacks
};

// Draws `kind` ("confusion") of `csv` into `png` and waits for it.
void draw_now(const std::string& kind, const std::string& csv, const std::string& png);

}  // namespace dtrain::apps
