#include "evaluation_files.h"

#include <filesystem>

#include <ATen/ATen.h>

#include "dtrain/train/csv_writer.h"
#include "plots.h"

namespace dtrain::apps {

namespace fs = std::filesystem;
using train::CsvWriter;

namespace {

void write_summary(const std::string& path, const EvaluationRecord& record) {
  const CloudEvaluation& result = *record.result;
  CsvWriter csv(path, {"checkpoint", "epochs_done", "samples", "votes", "test_loss",
                       "overall_accuracy", "mean_class_accuracy"});
  csv.write_row({train::csv_escape(record.checkpoint), record.epochs_done,
                 result.confusion.samples(), record.votes, result.stats.mean_loss,
                 result.confusion.overall_accuracy(), result.confusion.mean_class_accuracy()});
}

void write_per_class(const std::string& path, const EvaluationRecord& record) {
  const train::ConfusionMatrix& confusion = record.result->confusion;
  CsvWriter csv(path, {"class", "samples", "correct", "accuracy"});
  for (int64_t c = 0; c < confusion.num_classes(); ++c) {
    const auto accuracy = confusion.class_accuracy(c);
    csv.write_row({train::csv_escape((*record.class_names)[static_cast<std::size_t>(c)]),
                   confusion.class_samples(c), confusion.class_correct(c),
                   accuracy ? train::CsvWriter::Cell(*accuracy) : train::CsvWriter::Cell("")});
  }
}

void write_confusion(const std::string& path, const EvaluationRecord& record) {
  const train::ConfusionMatrix& confusion = record.result->confusion;
  std::vector<std::string> columns{"true\\predicted"};
  for (const std::string& name : *record.class_names) {
    columns.push_back(train::csv_escape(name));
  }
  CsvWriter csv(path, columns);
  for (int64_t t = 0; t < confusion.num_classes(); ++t) {
    std::vector<CsvWriter::Cell> row{columns[static_cast<std::size_t>(t + 1)]};
    for (int64_t p = 0; p < confusion.num_classes(); ++p) {
      row.emplace_back(confusion.count(t, p));
    }
    csv.write_row(row);
  }
}

void write_predictions(const std::string& path, const EvaluationRecord& record) {
  CsvWriter csv(path, {"sample", "label", "predicted"});
  const at::Tensor labels = record.labels->to(at::kCPU, at::kLong);
  const auto& predictions = record.result->predictions;
  for (std::size_t i = 0; i < predictions.size(); ++i) {
    csv.write_row(
        {static_cast<int64_t>(i), labels[static_cast<int64_t>(i)].item<int64_t>(), predictions[i]});
  }
}

}  // namespace

std::string beside(const std::string& csv, const std::string& suffix) {
  const fs::path path(csv);
  return (path.parent_path() / (path.stem().string() + suffix)).string();
}

std::vector<std::string> write_evaluation_files(const std::string& csv,
                                                const EvaluationRecord& record) {
  const std::vector<std::string> paths{beside(csv, "_eval.csv"), beside(csv, "_per_class.csv"),
                                       beside(csv, "_confusion.csv"),
                                       beside(csv, "_predictions.csv")};
  write_summary(paths[0], record);
  write_per_class(paths[1], record);
  write_confusion(paths[2], record);
  write_predictions(paths[3], record);
  draw_now("confusion", paths[2], beside(csv, "_confusion.png"));
  return paths;
}

}  // namespace dtrain::apps
