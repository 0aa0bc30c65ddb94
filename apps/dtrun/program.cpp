#include "program.h"

#include <cstdlib>
#include <filesystem>

#include "dtrain/launch/worker_process.h"
#include "dtrain/util/errors.h"

namespace dtrain::apps {

namespace {

bool is_python_script(const std::string& name) {
  return name.size() > 3 && name.ends_with(".py");
}

}  // namespace

std::vector<std::string> worker_command(std::vector<std::string> program, bool module,
                                        bool no_python) {
  DTRAIN_CHECK(!(module && no_python), "-m/--module runs MODULE with Python; it cannot be ",
               "combined with --no-python, which executes PROGRAM itself");
  if (program.empty()) {
    return program;  // validate() says what is missing
  }
  const std::string name = program.front();
  if (no_python || (!module && !is_python_script(name))) {
    launch::resolve_program(name);
    return program;
  }
  const char* exec = std::getenv("PYTHON_EXEC");
  const bool exec_given = exec != nullptr && *exec != '\0';
  const std::string python = exec_given ? exec : "python3";
  const std::string shown = python + " -u " + (module ? "-m " : "") + name;
  if (!module) {
    // Python opens the script from the working directory, not from PATH.
    std::error_code ec;
    DTRAIN_CHECK(std::filesystem::is_regular_file(name, ec), "PROGRAM '", name,
                 "': no such file; a .py program runs as '", shown,
                 "', so expected a script at that path (--no-python executes it from PATH "
                 "instead)");
  }
  try {
    launch::resolve_program(python);
  } catch (const Error&) {
    const std::string missing =
        exec_given ? "PYTHON_EXEC '" + python + "' does not exist or is not executable"
                   : "python3 was not found on PATH";
    const std::string instead = module ? "" : " (or --no-python to execute " + name + " itself)";
    throw Error("'" + name + "' runs as '" + shown + "', but " + missing +
                "; expected a Python interpreter: python3 on PATH, or PYTHON_EXEC naming one" +
                instead);
  }
  std::vector<std::string> command{python, "-u"};
  if (module) {
    command.push_back("-m");
  }
  command.insert(command.end(), program.begin(), program.end());
  return command;
}

}  // namespace dtrain::apps
