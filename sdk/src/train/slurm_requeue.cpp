#include "dtrain/train/slurm_requeue.h"

#include <signal.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "dtrain/util/errors.h"

namespace dtrain::train {

namespace {

std::optional<std::string> env_text(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') {
    return std::nullopt;
  }
  return std::string(value);
}

struct NamedSignal {
  const char* name;
  int number;
};

// The signals a job may be warned with (sbatch --signal takes these names).
constexpr NamedSignal kSignals[] = {{"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"HUP", SIGHUP},
                                    {"ALRM", SIGALRM}, {"URG", SIGURG},   {"XCPU", SIGXCPU},
                                    {"TERM", SIGTERM}, {"INT", SIGINT}};

int parse_signal(std::string text) {
  if (text.rfind("SIG", 0) == 0) {
    text = text.substr(3);
  }
  for (const NamedSignal& named : kSignals) {
    if (text == named.name || text == std::to_string(named.number)) {
      return named.number;
    }
  }
  throw Error(std::string(kRequeueSignalVariable) + "='" + text +
              "' is not a signal to requeue on: use USR1, USR2, HUP, ALRM, URG, XCPU, TERM, INT " +
              "(or their numbers), or none");
}

}  // namespace

std::optional<std::string> slurm_job_id() {
  return env_text("SLURM_JOB_ID");
}

int requeue_signal() {
  const std::optional<std::string> named = env_text(kRequeueSignalVariable);
  if (named && (*named == "none" || *named == "0")) {
    return 0;
  }
  if (!slurm_job_id()) {
    return 0;
  }
  return named ? parse_signal(*named) : SIGUSR1;
}

void requeue_slurm_job() {
  const std::optional<std::string> job = slurm_job_id();
  DTRAIN_CHECK(job && job->find_first_not_of("0123456789_") == std::string::npos,
               "cannot requeue: SLURM_JOB_ID='", job.value_or(""), "' is not a job id");
  const std::string command = "scontrol requeue " + *job + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  DTRAIN_CHECK(pipe != nullptr, "cannot requeue Slurm job ", *job, ": popen failed");
  std::string output;
  char buffer[256];
  while (std::fgets(buffer, sizeof(buffer), pipe) != nullptr) {
    output += buffer;
  }
  const int status = ::pclose(pipe);
  while (!output.empty() && output.back() == '\n') {
    output.pop_back();
  }
  DTRAIN_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "`scontrol requeue ", *job,
               "` failed", output.empty() ? "" : ": " + output,
               " (the job needs to be requeueable: sbatch --requeue, and scontrol on PATH)");
}

std::string slurm_job_summary() {
  const std::optional<std::string> job = slurm_job_id();
  if (!job) {
    return "";
  }
  return "SLURM_JOB_ID=" + *job +
         ", SLURM_RESTART_COUNT=" + env_text("SLURM_RESTART_COUNT").value_or("0");
}

}  // namespace dtrain::train
