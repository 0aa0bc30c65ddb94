// What check_same_settings names when the processes of a job were given
// different flags: each differing setting once, every value with the ranks
// holding it (runs of ranks as ranges), a setting one rank lacks as
// "(none)", and nothing at all when they agree.
#include <gtest/gtest.h>

#include "dtrain/dist/same_settings.h"

namespace {

using dtrain::dist::Setting;
using dtrain::dist::settings_disagreements;

std::vector<Setting> settings(const std::string& epochs, const std::string& lr) {
  return {{"--epochs", epochs}, {"--lr", lr}, {"--model", "ssg"}};
}

TEST(SameSettings, AgreeingRanksHaveNothingToSay) {
  EXPECT_TRUE(settings_disagreements({settings("5", "0.001")}).empty());
  EXPECT_TRUE(
      settings_disagreements(std::vector<std::vector<Setting>>(4, settings("5", "0.001"))).empty());
}

TEST(SameSettings, EachDifferingSettingNamesItsValuesAndTheirRanks) {
  const auto said = settings_disagreements({settings("5", "0.001"), settings("5", "0.001"),
                                            settings("5", "0.01"), settings("3", "0.001"),
                                            settings("5", "0.001"), settings("5", "0.001")});
  EXPECT_EQ(said,
            (std::vector<std::string>{R"(--epochs: "5" on ranks 0-2, 4-5, "3" on rank 3)",
                                      R"(--lr: "0.001" on ranks 0-1, 3-5, "0.01" on rank 2)"}));
}

TEST(SameSettings, ASettingOneRankLacksIsNamed) {
  auto older = settings("5", "0.001");
  older.pop_back();
  older.push_back({"--rotate", "false"});
  const auto said = settings_disagreements({settings("5", "0.001"), older});
  EXPECT_EQ(said, (std::vector<std::string>{R"(--model: "ssg" on rank 0, (none) on rank 1)",
                                            R"(--rotate: (none) on rank 0, "false" on rank 1)"}));
}

TEST(SameSettings, EmptyValuesAreShownAsSuch) {
  const auto said = settings_disagreements({{{"--dataset", ""}}, {{"--dataset", "synthetic"}}});
  EXPECT_EQ(said, (std::vector<std::string>{R"(--dataset: "" on rank 0, "synthetic" on rank 1)"}));
}

}  // namespace
