#include "run_tensorboard.h"

#include <algorithm>
#include <chrono>

namespace dtrain::train::detail {

RunTensorBoard::RunTensorBoard(const std::string& directory, bool writes) {
  if (writes && !directory.empty()) {
    writer_.emplace(directory);
  }
}

void RunTensorBoard::add_step(const StepRecord& step, double lr, std::optional<double> loss_scale,
                              int world) {
  if (!writer_) {
    return;
  }
  // A weighted split may give rank 0 more steps in an epoch than the
  // global batches: its curve then never steps back.
  const int64_t index = std::max((step.epoch - 1) * steps_per_epoch_ + step.step, last_step_ + 1);
  last_step_ = index;
  writer_->add_scalar("train/loss", index, step.loss);
  writer_->add_scalar("train/lr", index, lr);
  if (loss_scale) {
    writer_->add_scalar("train/loss_scale", index, *loss_scale);
  }
  const double seconds = std::chrono::duration<double>(step.end - step.data).count();
  if (seconds > 0) {
    writer_->add_scalar("train/samples_per_s", index,
                        static_cast<double>(step.samples) * world / seconds);
  }
}

void RunTensorBoard::add_epoch(int epoch, const ReportRow& row) {
  if (!writer_) {
    return;
  }
  for (std::size_t i = 0; i < row.columns.size() && i < row.values.size(); ++i) {
    if (row.columns[i] != "epoch") {
      writer_->add_scalar("epoch/" + row.columns[i], epoch, row.values[i]);
    }
  }
  writer_->flush();
}

}  // namespace dtrain::train::detail
