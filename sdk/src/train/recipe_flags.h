// The flags of a training recipe beside the Trainer's core ones
// (trainer_flags.cpp): the optimizer, warmup, gradient accumulation and
// clipping, DDP's own options, and the checkpoint policy (best k, early
// stopping), each bound to its TrainerOptions field.
#pragma once

#include "dtrain/train/flag_table.h"
#include "dtrain/train/trainer_options.h"

namespace dtrain::train::detail {

// --optimizer, --weight-decay, --momentum, --nesterov, --no-decay-norms-biases,
// --warmup-steps, --warmup-start-factor, --accumulate, --clip-grad-norm.
void add_recipe_flags(FlagTable& flags, TrainerOptions& options);
// --find-unused-parameters, --static-graph, --bucket-cap-mb, --first-bucket-mb,
// --gradient-as-bucket-view, --no-broadcast-buffers, --comm-hook.
void add_ddp_flags(FlagTable& flags, TrainerOptions& options);
// --best-by, --best-mode, --keep-best, --early-stop-patience, --early-stop-min-delta.
void add_checkpoint_policy_flags(FlagTable& flags, TrainerOptions& options);

}  // namespace dtrain::train::detail
