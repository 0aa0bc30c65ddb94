// dtrain::train: the CSV report and the progress line.
#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <functional>
#include <sstream>

#include "dtrain/train/csv_writer.h"
#include "dtrain/train/epoch_report.h"
#include "dtrain/train/progress_bar.h"
#include "dtrain/util/errors.h"
#include "test_support.h"

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(CsvWriter, WritesHeaderThenRows) {
  dtrain::testing::TempDir dir;
  const std::string path = dir.file("nested/dir/report.csv");
  {
    dtrain::train::CsvWriter csv(path, {"epoch", "loss", "note"});
    csv.write_row({int64_t{1}, 0.5, std::string("plain")});
    // Each row is on disk as soon as it is written.
    EXPECT_EQ(read_text(path), "epoch,loss,note\n1,0.5,plain\n");
    csv.write_row({int64_t{2}, 0.125, std::string("has, comma \"q\"")});
  }
  EXPECT_EQ(read_text(path), "epoch,loss,note\n1,0.5,plain\n2,0.125,\"has, comma \"\"q\"\"\"\n");
}

TEST(CsvWriter, RowLengthMustMatchHeader) {
  dtrain::testing::TempDir dir;
  dtrain::train::CsvWriter csv(dir.file("r.csv"), {"a", "b"});
  try {
    csv.write_row({int64_t{1}});
    FAIL() << "a short row was accepted";
  } catch (const dtrain::Error& e) {
    EXPECT_NE(std::string(e.what()).find("row has 1 cells but the header has 2"), std::string::npos)
        << e.what();
  }
}

TEST(CsvWriter, UnwritablePathIsAnIOError) {
  dtrain::testing::TempDir dir;
  dtrain::testing::write_file(dir.file("a_file"), {'x'});
  // A directory cannot be created beneath a regular file.
  EXPECT_THROW(dtrain::train::CsvWriter(dir.file("a_file/report.csv"), {"a"}), dtrain::IOError);
}

TEST(CsvWriter, AppendKeepsEarlierRowsOfTheSameReport) {
  dtrain::testing::TempDir dir;
  const std::string path = dir.file("report.csv");
  using Mode = dtrain::train::CsvWriter::Mode;
  // Missing: created with its header, as in kCreate.
  dtrain::train::CsvWriter(path, {"epoch", "loss"}, Mode::kAppend).write_row({int64_t{1}, 0.5});
  dtrain::train::CsvWriter(path, {"epoch", "loss"}, Mode::kAppend).write_row({int64_t{2}, 0.25});
  EXPECT_EQ(read_text(path), "epoch,loss\n1,0.5\n2,0.25\n");
  try {
    dtrain::train::CsvWriter(path, {"epoch", "accuracy"}, Mode::kAppend);
    FAIL() << "rows were to be added under another header";
  } catch (const dtrain::IOError& e) {
    EXPECT_NE(std::string(e.what()).find("exists with other columns (epoch,loss)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(read_text(path), "epoch,loss\n1,0.5\n2,0.25\n") << "the refused report changed";
  // A row cut short by a crash: the next one starts on a new line.
  std::ofstream(path, std::ios::app) << "3,0.1";
  dtrain::train::CsvWriter(path, {"epoch", "loss"}, Mode::kAppend).write_row({int64_t{3}, 0.125});
  EXPECT_EQ(read_text(path), "epoch,loss\n1,0.5\n2,0.25\n3,0.1\n3,0.125\n");
  // kCreate starts afresh.
  dtrain::train::CsvWriter(path, {"epoch", "loss"});
  EXPECT_EQ(read_text(path), "epoch,loss\n");
}

TEST(ProgressBar, RendersFractionCountsAndRate) {
  const std::string line = dtrain::train::render_progress("epoch 1", 5, 10, 2.0, "loss 0.5", 10);
  EXPECT_EQ(line, "epoch 1 [#####     ] 5/10 2.0s 2.5 it/s loss 0.5");
}

TEST(ProgressBar, ClampsAndHandlesZeroTotal) {
  EXPECT_EQ(dtrain::train::render_progress("x", 12, 10, 0.0, "", 4),
            "x [####] 12/10 0.0s 0.0 it/s");
  EXPECT_EQ(dtrain::train::render_progress("x", 0, 0, 1.0, "", 4), "x [    ] 0/0 1.0s 0.0 it/s");
}

// A status that costs a device sync to make (the loss of a GPU step) is
// made only for the lines the bar draws, never on a rank that draws none.
TEST(ProgressBar, MakesALazyStatusOnlyWhenItDraws) {
  int made = 0;
  const std::function<std::string()> status = [&made] {
    ++made;
    return std::string("loss 1.0");
  };
  dtrain::train::ProgressBar hidden("t", 100, /*enabled=*/false);
  for (int i = 0; i < 100; ++i) {
    hidden.advance(1, status);
  }
  EXPECT_EQ(made, 0);
  dtrain::train::ProgressBar shown("t", 100, /*enabled=*/true);
  for (int i = 0; i < 100; ++i) {
    shown.advance(1, status);
  }
  if (isatty(STDERR_FILENO) != 1) {
    EXPECT_EQ(made, 9) << "a log line at each tenth of the way, the last at finish";
  } else {
    EXPECT_LE(made, 9);
  }
  shown.finish();
}

TEST(ProgressBar, CountsSteps) {
  dtrain::train::ProgressBar bar("t", 3, /*enabled=*/false);
  bar.advance();
  bar.advance(2, "done");
  EXPECT_EQ(bar.done(), 3);
  bar.finish();
}

}  // namespace

namespace {

dtrain::train::EpochStats report_epoch() {
  return {.mean_loss = 1.0, .samples = 10, .seconds = 0.5};
}

// The best epoch is the highest test accuracy (the earlier of a tie), and
// each row written is followed by the report's listener.
TEST(EpochReport, NamesTheBestEpochAndCallsItsListenerAfterEachRow) {
  dtrain::testing::TempDir dir;
  const std::string path = dir.file("report.csv");
  std::vector<std::string> heard;
  dtrain::train::EpochReport report(
      path, /*writes=*/true,
      {.epochs = 3,
       .extra_columns = {"mean_class_accuracy"},
       .after_row = [&heard](const std::string& csv) { heard.push_back(csv); }});
  EXPECT_FALSE(report.best_epoch().has_value());
  const std::vector<double> accuracy{0.5, 0.8, 0.8};
  for (int epoch = 1; epoch <= 3; ++epoch) {
    report.record(epoch, report_epoch(),
                  {.mean_loss = 0.3, .accuracy = accuracy[epoch - 1], .extra = {1.0 - epoch * 0.1}},
                  {});
    EXPECT_EQ(heard.size(), static_cast<std::size_t>(epoch));
  }
  EXPECT_EQ(heard.back(), path);
  EXPECT_EQ(report.best_epoch(), 2);

  // Ranks that do not write have no best.
  dtrain::train::EpochReport silent(dir.file("none.csv"), /*writes=*/false, {.epochs = 3});
  silent.record(1, report_epoch(), {.accuracy = 0.9}, {});
  EXPECT_FALSE(silent.best_epoch().has_value());
}

// A resumed run's report counts the rows of the run it continues, by the
// column it is told (here the first extra one, where epoch 1 is best).
TEST(EpochReport, AResumedRunsBestCountsTheEarlierRows) {
  dtrain::testing::TempDir dir;
  const std::string path = dir.file("report.csv");
  const dtrain::train::EpochReportOptions options{
      .epochs = 3, .extra_columns = {"instance_miou"}, .best_by = "instance_miou"};
  {
    dtrain::train::EpochReport first(path, true, options);
    first.record(1, report_epoch(), {.accuracy = 0.4, .extra = {0.9}}, {});
    first.record(2, report_epoch(), {.accuracy = 0.6, .extra = {0.7}}, {});
  }
  auto resumed_options = options;
  resumed_options.append = true;
  dtrain::train::EpochReport resumed(path, true, resumed_options);
  EXPECT_EQ(resumed.best_epoch(), 1);
  resumed.record(3, report_epoch(), {.accuracy = 0.9, .extra = {0.95}}, {});
  EXPECT_EQ(resumed.best_epoch(), 3);
  EXPECT_EQ(dtrain::testing::read_csv(path).size(), 4u);
}

}  // namespace
