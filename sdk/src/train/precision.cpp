#include "dtrain/train/precision.h"

namespace dtrain::train {

amp::AutocastOptions autocast_options(Precision precision, c10::Device device) {
  return amp::AutocastOptions(device.type())
      .enabled(precision != Precision::kFp32)
      .dtype(precision == Precision::kFp16 ? at::kHalf : at::kBFloat16);
}

std::unique_ptr<amp::GradScaler> loss_scaler(Precision precision) {
  return precision == Precision::kFp16 ? std::make_unique<amp::GradScaler>() : nullptr;
}

std::string precision_description(Precision precision, c10::Device device) {
  switch (precision) {
    case Precision::kBf16:
      return device.is_cuda() ? "bf16 autocast (CUDA)" : "bf16 autocast (CPU)";
    case Precision::kFp16:
      return "fp16 autocast with loss scaling";
    case Precision::kFp32:
      break;
  }
  return "fp32";
}

}  // namespace dtrain::train
