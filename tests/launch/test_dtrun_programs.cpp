// What dtrun executes for PROGRAM: a .py script or a -m module with
// Python, unbuffered, as torchrun does; anything else, or everything with
// --no-python, as given. A missing interpreter or script is a usage error
// before any worker starts.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "dtrain/launch/worker_process.h"
#include "dtrain/util/errors.h"
#include "dtrun_test_util.h"

namespace {

using namespace std::chrono_literals;
using dtrain::testing::BackgroundProcess;
using dtrain::testing::read_text;
using dtrain::testing::ScopedEnv;
using dtrain::testing::TempDir;

const std::string kDtrun = DTRAIN_DTRUN_PATH;

class DtrunPrograms : public ::testing::Test {
 protected:
  std::string file(const std::string& name) const { return dir_.file(name); }
  void write(const std::string& name, const std::string& text, bool executable = false) {
    std::ofstream(file(name)) << text;
    ::chmod(file(name).c_str(), executable ? 0755 : 0644);
  }
  // dtrun with `args` (flags, program, its arguments); OUT is the directory.
  int run(const std::vector<std::string>& args, std::map<std::string, std::string> env = {}) {
    std::vector<std::string> argv{kDtrun};
    argv.insert(argv.end(), args.begin(), args.end());
    env["OUT"] = dir_.path().string();
    BackgroundProcess dtrun(argv, file("dtrun.out"), env);
    const int code = dtrun.wait(60s);
    output_ = dtrun.output();
    return code;
  }

  ScopedEnv env_{"PYTHON_EXEC", nullptr};
  TempDir dir_;
  std::string output_;
};

// A stand-in interpreter that records its arguments: the command line
// exactly, with no Python needed.
TEST_F(DtrunPrograms, PythonExecRunsScriptsAndModulesWithDashU) {
  write("fakepy", "#!/bin/sh\nprintf '%s\\n' \"$*\" > \"$OUT/argv.$RANK\"\n", true);
  write("main.py", "not Python at all: only the stand-in reads this name\n");
  const std::map<std::string, std::string> env{{"PYTHON_EXEC", file("fakepy")}};
  ASSERT_EQ(run({"--standalone", "--nproc-per-node", "2", file("main.py"), "a", "--b"}, env), 0)
      << output_;
  EXPECT_EQ(read_text(file("argv.0")), "-u " + file("main.py") + " a --b\n");
  EXPECT_EQ(read_text(file("argv.1")), "-u " + file("main.py") + " a --b\n");
  ASSERT_EQ(run({"--standalone", "-m", "pkg.train", "--epochs", "3"}, env), 0) << output_;
  EXPECT_EQ(read_text(file("argv.0")), "-u -m pkg.train --epochs 3\n");
  // Not a .py name: executed as given, the interpreter untouched.
  std::filesystem::remove(file("argv.0"));
  ASSERT_EQ(run({"--standalone", "/bin/sh", "-c", "echo native > \"$OUT/native\""}, env), 0)
      << output_;
  EXPECT_EQ(read_text(file("native")), "native\n");
  EXPECT_FALSE(std::filesystem::exists(file("argv.0")));
}

TEST_F(DtrunPrograms, NoPythonExecutesAPyScriptItself) {
  write("tool.py", "#!/bin/sh\necho \"shell $RANK $*\" > \"$OUT/ran\"\n", true);
  const std::map<std::string, std::string> env{{"PYTHON_EXEC", "/bin/false"}};
  ASSERT_EQ(run({"--standalone", "--no-python", file("tool.py"), "x"}, env), 0) << output_;
  EXPECT_EQ(read_text(file("ran")), "shell 0 x\n");
}

// The real thing, where python3 is on PATH: a script with no shebang and
// no execute bit (which exec alone fails on) and a module, unbuffered.
TEST_F(DtrunPrograms, Python3OnPathRunsAScriptAndAModule) {
  try {
    dtrain::launch::resolve_program("python3");
  } catch (const dtrain::Error&) {
    GTEST_SKIP() << "no python3 on PATH";
  }
  const std::string probe =
      "import os, sys\n"
      "with open(os.path.join(os.environ['OUT'], 'rank.' + os.environ['RANK']), 'w') as f:\n"
      "    f.write(f\"{__name__} {os.environ['RANK']} {sys.stdout.write_through} "
      "{sys.argv[1:]}\")\n";
  write("main.py", probe);
  ASSERT_EQ(run({"--standalone", "--nproc-per-node", "2", file("main.py"), "a"}), 0) << output_;
  EXPECT_EQ(read_text(file("rank.0")), "__main__ 0 True ['a']");
  EXPECT_EQ(read_text(file("rank.1")), "__main__ 1 True ['a']");
  write("dtrun_probe_module.py", probe);
  ASSERT_EQ(run({"--standalone", "-m", "dtrun_probe_module", "b"},
                {{"PYTHONPATH", dir_.path().string()}}),
            0)
      << output_;
  EXPECT_EQ(read_text(file("rank.0")), "__main__ 0 True ['b']");
}

TEST_F(DtrunPrograms, AMissingInterpreterOrScriptStopsDtrunBeforeAnyWorker) {
  write("main.py", "import os\nopen(os.environ['OUT'] + '/ran', 'w')\n");
  const std::string script = file("main.py");
  const std::string missing = file("missing.py");
  EXPECT_EQ(run({"--standalone", missing}), 2) << output_;
  EXPECT_EQ(output_, "dtrun: error: PROGRAM '" + missing +
                         "': no such file; a .py program runs as 'python3 -u " + missing +
                         "', so expected a script at that path (--no-python executes it from "
                         "PATH instead); see dtrun --help\n");

  EXPECT_EQ(run({"--standalone", script}, {{"PYTHON_EXEC", "/no/such/python"}}), 2) << output_;
  EXPECT_EQ(output_, "dtrun: error: '" + script + "' runs as '/no/such/python -u " + script +
                         "', but PYTHON_EXEC '/no/such/python' does not exist or is not "
                         "executable; expected a Python interpreter: python3 on PATH, or "
                         "PYTHON_EXEC naming one (or --no-python to execute " +
                         script + " itself); see dtrun --help\n");

  EXPECT_EQ(run({"--standalone", script}, {{"PATH", dir_.path().string()}}), 2) << output_;
  EXPECT_EQ(output_, "dtrun: error: '" + script + "' runs as 'python3 -u " + script +
                         "', but python3 was not found on PATH; expected a Python interpreter: "
                         "python3 on PATH, or PYTHON_EXEC naming one (or --no-python to execute " +
                         script + " itself); see dtrun --help\n");

  EXPECT_EQ(run({"--standalone", "-m", "--no-python", "pkg.train"}), 2) << output_;
  EXPECT_EQ(output_,
            "dtrun: error: -m/--module runs MODULE with Python; it cannot be combined with "
            "--no-python, which executes PROGRAM itself; see dtrun --help\n");
  EXPECT_FALSE(std::filesystem::exists(file("ran")));
}

}  // namespace
