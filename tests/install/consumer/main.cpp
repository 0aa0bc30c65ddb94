// Uses a model, a kernel and the logger of an installed dtrain.
#include <cstdio>

#include <dtrain/config.h>
#include <dtrain/kernels/metrics.h>
#include <dtrain/models/toy_cnn.h>
#include <dtrain/util/logging.h>

int main() {
  dtrain::models::ToyCnn model(dtrain::models::ToyCnnOptions().in_channels(1));
  const torch::Tensor logits = model(torch::randn({4, 1, 32, 32}));
  // Labels equal to the predictions: every row must count as correct.
  const int64_t correct = dtrain::kernels::count_correct(logits, logits.argmax(1)).item<int64_t>();
  spdlog::info("consumer logits {}x{}", logits.size(0), logits.size(1));
  std::printf("consumer ok: dtrain %s, %lld/4 predictions counted\n", DTRAIN_VERSION_STRING,
              static_cast<long long>(correct));
  return correct == 4 ? 0 : 1;
}
