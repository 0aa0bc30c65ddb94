// What a Precision (trainer_options.h) means on a device: the autocast
// region of each forward pass, the loss scaler of fp16 steps, and the
// words for the log.
#pragma once

#include <memory>
#include <string>

#include <c10/core/Device.h>

#include "dtrain/amp/autocast.h"
#include "dtrain/amp/grad_scaler.h"
#include "dtrain/train/trainer_options.h"

namespace dtrain::train {

// Autocast for `device`: bf16 or fp16 as `precision` says, disabled in fp32.
amp::AutocastOptions autocast_options(Precision precision, c10::Device device);

// fp16's loss scaler, with torch.amp's defaults; nullptr otherwise.
std::unique_ptr<amp::GradScaler> loss_scaler(Precision precision);

// For the log: "fp32", "bf16 autocast (CPU)", "bf16 autocast (CUDA)",
// "fp16 autocast with loss scaling".
std::string precision_description(Precision precision, c10::Device device);

}  // namespace dtrain::train
