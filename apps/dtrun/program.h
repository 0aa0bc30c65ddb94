// What dtrun executes for PROGRAM [ARGS...], as torchrun does for Python:
// NAME.py runs as `PYTHON -u NAME.py ARGS`, and with -m/--module PROGRAM
// names a module, run as `PYTHON -u -m MODULE ARGS` (-u: unbuffered, so a
// worker's lines reach the console and its log as it prints them). PYTHON
// is $PYTHON_EXEC, torchrun's override, else python3 on PATH. Any other
// program, and every program with --no-python, is executed as given.
//
// torchrun runs *every* program with Python unless --no-python; dtrun's
// programs are mostly native, so only a .py name (or -m) asks for Python.
#pragma once

#include <string>
#include <vector>

namespace dtrain::apps {

// The worker's command line for `program` (empty stays empty). Checks that
// it can start, so that no worker fails to: the executable exists (on PATH,
// or at its path), and for Python the interpreter and the script do.
// Throws dtrain::Error naming the program, the interpreter, what was
// expected and how to get it.
std::vector<std::string> worker_command(std::vector<std::string> program, bool module,
                                        bool no_python);

}  // namespace dtrain::apps
