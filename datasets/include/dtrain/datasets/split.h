// Which part of a dataset to load: the one to train on or the held-out one.
// Shared by every reader in dtrain::datasets.
#pragma once

namespace dtrain::datasets {

enum class Split { kTrain, kTest };

}  // namespace dtrain::datasets
