#include "data_limits.h"

#include "dtrain/util/cli_checks.h"

namespace dtrain::apps {

void add_data_limit_flags(train::FlagTable& flags, DataLimits& limits, const std::string& noun) {
  flags.topic("Data");
  flags
      .add("--train-limit", limits.train, "Use only the first N training " + noun + " (0: all)",
           train::Agreement::same())
      ->check(util::non_negative())
      ->capture_default_str();
  flags
      .add("--test-limit", limits.test, "Use only the first N test " + noun + " (0: all)",
           train::Agreement::same())
      ->check(util::non_negative())
      ->capture_default_str();
}

}  // namespace dtrain::apps
