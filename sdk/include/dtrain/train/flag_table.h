// One table of a program's flags: each flag is declared once, with its
// typed parse (CLI11 binds it to a variable; an enum takes the words of its
// EnumWords table) and whether every process of a job must be given it
// alike. From the table come the settings the processes compare when the
// job starts (dist::check_same_settings) and the advice printed when they
// differ, so a new flag cannot be forgotten in either.
//
//   CLI::App app{"..."};
//   FlagTable flags(app);
//   flags.add("--epochs", epochs, "Passes over the training set", Agreement::same())
//       ->check(util::positive());
//   flags.add_choice("--amp", precision, precision_words(), "...", Agreement::same());
//   flags.add("--threads", threads, "Intra-op threads", Agreement::may_differ());
//   ... parse ...
//   dist::check_same_settings(flags.same_settings(), flags.advice());
//
// A flag given twice takes its last value, as with argparse (scripts put
// their defaults first and the user's arguments after them). Checks of
// several flags together run once parsing is complete, in the order they
// were added, and report a bad combination as a bad flag (the table holds
// the app's parse_complete_callback for them). The table keeps
// references to the variables it binds, which must outlive it; so must
// `app`. Not thread-safe.
#pragma once

#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "dtrain/dist/setting.h"
#include "dtrain/util/enum_words.h"

namespace dtrain::train {

// Whether a flag must be alike on every process of a job.
class Agreement {
 public:
  // Its value is compared across the processes when the job starts.
  static Agreement same() { return Agreement(Kind::kSame); }
  // Free to differ (thread counts, paths local to a node, timeouts): the
  // advice lists it.
  static Agreement may_differ() { return Agreement(Kind::kMayDiffer); }
  // Not compared: it differs by nature (--rank) or is checked otherwise
  // (--resume: the ranks compare where they resume).
  static Agreement not_compared() { return Agreement(Kind::kNotCompared); }
  // Only `compared()` of it is compared, and the rest may differ, named
  // `free_part` in the advice: --checkpoint compares whether one is given
  // ("--checkpoint's path" may differ).
  static Agreement partly(std::function<std::string()> compared, std::string free_part);

 private:
  friend class FlagTable;
  enum class Kind { kSame, kMayDiffer, kNotCompared, kPartly };
  explicit Agreement(Kind kind) : kind_(kind) {}

  Kind kind_;
  std::function<std::string()> compared_;
  std::string free_part_;
};

class FlagTable {
 public:
  explicit FlagTable(CLI::App& app);
  FlagTable(const FlagTable&) = delete;
  FlagTable& operator=(const FlagTable&) = delete;

  // A flag with a value parsed into `value` (a number, a string, a bool
  // given a value); compared, where it is, as fmt formats it.
  template <typename T>
  CLI::Option* add(const std::string& name, T& value, const std::string& help,
                   Agreement agreement) {
    CLI::Option* option = app_->add_option(name, value, help);
    record(option, std::move(agreement), [&value] { return fmt::format("{}", value); });
    return option;
  }

  // A flag that takes one of `words` (refused otherwise, naming the
  // choices) into `value`; its default shown in --help.
  template <typename E>
  CLI::Option* add_choice(const std::string& name, E& value, const util::EnumWords<E>& words,
                          const std::string& help, Agreement agreement) {
    CLI::Option* option =
        app_->add_option_function<std::string>(
                name, [&value, &words](const std::string& word) { value = words.value(word); },
                help)
            ->check(CLI::IsMember(words.words()))
            ->default_str(words.word(value));
    record(option, std::move(agreement), [&value, &words] { return words.word(value); });
    return option;
  }

  // A flag read from its text by `parse`, which throws an exception saying
  // what is wrong (the flag is then refused with that and the text), and
  // compared and shown in --help as `format` writes the value.
  template <typename T>
  CLI::Option* add_text(const std::string& name, T& value,
                        std::type_identity_t<std::function<T(const std::string&)>> parse,
                        std::type_identity_t<std::function<std::string(const T&)>> format,
                        const std::string& help, Agreement agreement) {
    CLI::Option* option =
        app_->add_option_function<std::string>(
                name, [&value, parse](const std::string& text) { value = parse(text); }, help)
            ->check(CLI::Validator(
                [parse](std::string& text) -> std::string {
                  try {
                    parse(text);
                    return "";
                  } catch (const std::exception& e) {
                    return std::string(e.what()) + " (got '" + text + "')";
                  }
                },
                ""))
            ->default_str(format(value));
    record(option, std::move(agreement), [&value, format] { return format(value); });
    return option;
  }

  // The topic of the flags added next ("Data", "Training"): `--help TOPIC`
  // shows them (util/cli_help.h). Flags added before any topic is set
  // fall under CLI11's "Options".
  void topic(const std::string& name);

  // A switch without a value ("--normals", "--augment,!--no-augment");
  // compared as "true" or "false".
  CLI::Option* add_switch(const std::string& name, bool& value, const std::string& help,
                          Agreement agreement);

  // Runs `check` once every flag is parsed (after the checks added
  // before); it throws CLI::ValidationError naming the flag at fault.
  void check(std::function<void()> check);

  // Adds to the advice: ", and `words`" ("give each a --data-dir holding
  // the same dataset").
  void advise(std::string words);

  CLI::App& app() const { return *app_; }

  // The compared flags and their values now, in the order they were added.
  std::vector<dist::Setting> same_settings() const;
  // For a job whose processes were given different flags: "Start every
  // process with the same flags (only --threads and --csv may differ)"
  // and what advise() added.
  std::string advice() const;
  // Every flag and its value now, in the order added, but those CLI11 reads
  // from no config file (CLI::Option::configurable(false)): what a run
  // config holds (run_config.h). A switch is named by its first long name,
  // which must be the one that sets it ("--augment,!--no-augment").
  std::vector<dist::Setting> config_settings() const;

 private:
  struct Entry {
    std::string name;  // the flag's first long name ("--augment")
    const CLI::Option* option;
    Agreement agreement;
    std::function<std::string()> value;
  };
  void record(CLI::Option* option, Agreement agreement, std::function<std::string()> value);

  CLI::App* app_;
  std::vector<Entry> entries_;
  std::vector<std::function<void()>> checks_;
  std::vector<std::string> advice_;
};

}  // namespace dtrain::train
