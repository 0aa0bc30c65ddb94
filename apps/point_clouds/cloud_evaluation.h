// train_pointnet2's evaluation: the whole test set's mean loss, overall
// accuracy (OA) and mean class accuracy (mAcc) from one confusion matrix
// summed over the job's ranks, each sample counted once; optionally with
// PointNet++'s test-time voting (the logits of several randomly rotated
// and scaled copies of each cloud, averaged).
#pragma once

#include <cstdint>
#include <vector>

#include "classification.h"
#include "dtrain/train/confusion_matrix.h"
#include "dtrain/train/evaluation.h"

namespace dtrain::apps {

// --votes: copy 0 is the cloud as given, so one vote is no voting; copy
// v > 0 is rotated about the up axis by a uniform angle and scaled by a
// uniform factor in [0.8, 1.25], drawn from the sample's own generator
// (train::sample_generator: the seed, the copy, the sample's index), so a
// result repeats whatever the batch size or the number of processes.
struct Voting {
  int64_t votes = 1;
  uint64_t seed = 0;
  int64_t up_axis = 1;  // y, as in ModelNet40
};

// Copy `copy` of the clouds (B, N, 3 or 6) test samples [first, first + B).
at::Tensor voting_copy(const at::Tensor& clouds, int64_t first, int64_t copy, const Voting& voting);

struct CloudEvaluation {
  // mean_loss, accuracy (OA), extra: {mean class accuracy}
  train::EvalStats stats;
  train::ConfusionMatrix confusion;
  // Every test sample's predicted class, in order (when asked for).
  std::vector<int64_t> predictions;
};

// The names of EvalStats::extra that evaluate_clouds reports.
const std::vector<std::string>& cloud_report_columns();  // {"mean_class_accuracy"}

// Over this rank's slice of `test` (EvalContext::for_each_batch); every
// rank gets the whole set's numbers, and with `with_predictions` every
// sample's prediction (one more value per sample in the ranks' sum, which
// the evaluation after each training epoch does without).
CloudEvaluation evaluate_clouds(const Forward& forward, const LabeledTensors& test,
                                int64_t num_classes, const Voting& voting,
                                const train::EvalContext& context, bool with_predictions);

}  // namespace dtrain::apps
