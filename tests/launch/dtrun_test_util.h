// Running dtrun from tests: a temporary directory for the workers' files,
// shell-script workers, and dtrun started in the background.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "background_process.h"
#include "test_support.h"

namespace dtrain::testing {

// dtrun with `flags`, running `/bin/sh -c script` as its workers; OUT in
// the workers' environment is `dir`. Output goes to dir/<name>.out.
inline std::unique_ptr<BackgroundProcess> start_dtrun(const std::string& dtrun,
                                                      const std::vector<std::string>& flags,
                                                      const std::string& script,
                                                      const std::string& dir,
                                                      const std::string& name = "dtrun") {
  std::vector<std::string> argv{dtrun};
  argv.insert(argv.end(), flags.begin(), flags.end());
  if (!script.empty()) {
    argv.insert(argv.end(), {"/bin/sh", "-c", script});
  }
  return std::make_unique<BackgroundProcess>(argv, dir + "/" + name + ".out",
                                             std::map<std::string, std::string>{{"OUT", dir}});
}

// KEY=VALUE lines of a file written by `env`, as a map.
inline std::map<std::string, std::string> read_env_file(const std::string& path) {
  std::map<std::string, std::string> env;
  for (const std::string& line : non_empty_lines(read_text(path))) {
    const auto equals = line.find('=');
    if (equals != std::string::npos) {
      env[line.substr(0, equals)] = line.substr(equals + 1);
    }
  }
  return env;
}

}  // namespace dtrain::testing
