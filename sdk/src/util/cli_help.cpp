#include "dtrain/util/cli_help.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <set>

namespace dtrain::util {

namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

bool is_help_flag(const CLI::Option* option) {
  return option->check_lname("help") || option->check_lname("help-all") ||
         option->check_lname("version");
}

bool is_common(const CLI::Option* option, const std::vector<std::string>& common) {
  return is_help_flag(option) ||
         std::any_of(common.begin(), common.end(),
                     [option](const std::string& name) { return option->check_name(name); });
}

// The topics in the order their first flag was added, lower-cased.
std::vector<std::string> topics(CLI::App& app) {
  std::vector<std::string> found;
  for (const CLI::Option* option : app.get_options()) {
    const std::string topic = lower(option->get_group());
    if (!topic.empty() && !is_help_flag(option) &&
        std::find(found.begin(), found.end(), topic) == found.end()) {
      found.push_back(topic);
    }
  }
  return found;
}

std::string join(const std::vector<std::string>& words) {
  std::string text;
  for (const std::string& word : words) {
    text += (text.empty() ? "" : ", ") + word;
  }
  return text;
}

// CLI11 leaves flags of the empty group out of its help, so each view
// hides the flags it does not show (the program exits after printing).
std::string render(CLI::App& app, const std::function<bool(const CLI::Option*)>& shown) {
  std::map<CLI::Option*, std::string> groups;
  for (CLI::Option* option : app.get_options(std::function<bool(CLI::Option*)>{})) {
    groups[option] = option->get_group();
    if (!shown(option)) {
      option->group("");
    }
  }
  std::string text = app.help();
  for (auto& [option, group] : groups) {
    option->group(group);
  }
  // CLI11 puts two blank lines between groups; one keeps more on a screen.
  for (size_t at; (at = text.find("\n\n\n")) != std::string::npos;) {
    text.erase(at, 1);
  }
  return text;
}

// Letters inserted, deleted or replaced to turn `a` into `b`.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) {
    row[j] = j;
  }
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string did_you_mean(const CLI::App& app, const std::string& word) {
  if (word.rfind("--", 0) != 0 || word.size() < 3) {
    return "";
  }
  const std::string typed = word.substr(2, word.find('=') - 2);
  std::string best;
  size_t best_distance = 3;  // more than two edits is no typo
  std::vector<std::string> extending;
  for (const CLI::Option* option : app.get_options()) {
    for (const std::string& name : option->get_lnames()) {
      if (name.rfind(typed, 0) == 0) {
        extending.push_back(name);
      }
      if (const size_t distance = edit_distance(typed, name); distance < best_distance) {
        best_distance = distance;
        best = name;
      }
    }
  }
  if (best.empty() && extending.size() == 1) {
    best = extending.front();
  }
  return best.empty() ? "" : "; did you mean --" + best + "?";
}

std::string topic_help(CLI::App& app, const std::vector<std::string>& common,
                       const std::string& topic) {
  const std::vector<std::string> all = topics(app);
  const std::string wanted = lower(topic);
  const std::string name = app.get_name();
  if (wanted == "all") {
    return render(app, [](const CLI::Option*) { return true; });
  }
  if (wanted.empty()) {
    // The topics before the program's footer (its examples), which ends the help.
    const std::string footer = app.get_footer();
    app.footer("");
    std::string text =
        render(app, [&](const CLI::Option* option) { return is_common(option, common); });
    app.footer(footer);
    text += "More flags by topic: " + join(all) + ".\n" + name + " --help TOPIC shows a topic ('" +
            name + " --help " + (all.empty() ? "all" : all.front()) + "'), " + name +
            " --help-all every flag.\n";
    return footer.empty() ? text : text + "\n" + footer + "\n";
  }
  if (std::find(all.begin(), all.end(), wanted) == all.end()) {
    throw CLI::ValidationError("--help " + topic,
                               "no such topic; the topics are " + join(all) + ", or all");
  }
  return render(app, [&](const CLI::Option* option) {
    return lower(option->get_group()) == wanted && !is_help_flag(option);
  });
}

void add_topic_help(CLI::App& app, std::vector<std::string> common) {
  app.set_help_flag();
  app.set_help_all_flag();
  const auto print = [&app, common](const std::string& topic) {
    const std::string text = topic_help(app, common, topic);
    std::fputs(text.c_str(), stdout);
    throw CLI::Success();
  };
  app.add_option_function<std::string>("-h,--help", print,
                                       "Print the common flags, or a TOPIC's, and exit")
      ->expected(0, 1)
      ->type_name("[TOPIC]")
      ->trigger_on_parse()
      ->group("Help");
  app.add_flag_callback(
         "--help-all", [print] { print("all"); }, "Print every flag and exit")
      ->trigger_on_parse()
      ->group("Help");
}

}  // namespace dtrain::util
