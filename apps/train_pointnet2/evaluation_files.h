// What train_pointnet2 --eval-only writes beside its --csv report
// (out/train_pointnet2.csv -> out/train_pointnet2_eval.csv, ...):
//   _eval.csv         one row: checkpoint, epochs, samples, votes,
//                     test_loss, overall_accuracy, mean_class_accuracy
//   _per_class.csv    class, samples, correct, accuracy (the dataset's names)
//   _confusion.csv    rows: true classes, columns: predicted ones, counts
//   _confusion.png    its heat map (plots.h; skipped, said once, without matplotlib)
//   _predictions.csv  sample, label, predicted: each test cloud in order
#pragma once

#include <string>
#include <vector>

#include "cloud_evaluation.h"
#include "dtrain/train/trainer.h"

namespace dtrain::apps {

// The file beside `csv` with `suffix` in place of its extension:
// ("out/run.csv", "_confusion.png") -> "out/run_confusion.png".
std::string beside(const std::string& csv, const std::string& suffix);

struct EvaluationRecord {
  std::string checkpoint;
  int64_t epochs_done = 0;
  int64_t votes = 1;
  const CloudEvaluation* result = nullptr;
  const std::vector<std::string>* class_names = nullptr;
  const at::Tensor* labels = nullptr;  // the test set's, (N,)
};

// Writes every file above; throws dtrain::IOError naming one that cannot be
// written. Returns the paths written, for the log.
std::vector<std::string> write_evaluation_files(const std::string& csv,
                                                const EvaluationRecord& record);

}  // namespace dtrain::apps
