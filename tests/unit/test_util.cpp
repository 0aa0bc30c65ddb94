// dtrain::util: check macros, launch environment, logging prefix, memory and its policy.
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <sstream>
#include <vector>

#include "dtrain/util/device_memory.h"
#include "dtrain/util/errors.h"
#include "dtrain/util/job_rank.h"
#include "dtrain/util/launch_env.h"
#include "dtrain/util/logging.h"
#include "dtrain/util/memory.h"
#include "test_support.h"

namespace {

using dtrain::testing::ScopedEnv;

constexpr const char* kLauncherVars[] = {"RANK",
                                         "LOCAL_RANK",
                                         "WORLD_SIZE",
                                         "LOCAL_WORLD_SIZE",
                                         "OMPI_COMM_WORLD_RANK",
                                         "OMPI_COMM_WORLD_LOCAL_RANK",
                                         "OMPI_COMM_WORLD_SIZE",
                                         "OMPI_COMM_WORLD_LOCAL_SIZE",
                                         "PMI_RANK",
                                         "PMI_SIZE",
                                         "MPI_LOCALRANKID",
                                         "MPI_LOCALNRANKS",
                                         "SLURM_PROCID",
                                         "SLURM_LOCALID",
                                         "SLURM_NTASKS"};

void clear_launcher_vars(ScopedEnv& env) {
  for (const char* name : kLauncherVars) {
    env.set(name, nullptr);
  }
}

TEST(Check, MessageConcatenatesItsParts) {
  try {
    const int npoint = -3;
    DTRAIN_CHECK(npoint > 0, "npoint must be positive, got ", npoint);
    FAIL() << "DTRAIN_CHECK did not throw";
  } catch (const dtrain::Error& e) {
    EXPECT_STREQ(e.what(), "npoint must be positive, got -3");
  }
}

TEST(Check, PassingConditionDoesNotThrow) {
  EXPECT_NO_THROW(DTRAIN_CHECK(1 + 1 == 2, "math"));
}

TEST(Check, InternalAssertNamesFileAndCondition) {
  try {
    DTRAIN_INTERNAL_ASSERT(2 < 1, "detail ", 7);
    FAIL() << "DTRAIN_INTERNAL_ASSERT did not throw";
  } catch (const dtrain::InternalError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("test_util.cpp"), std::string::npos) << message;
    EXPECT_NE(message.find("2 < 1"), std::string::npos) << message;
    EXPECT_NE(message.find("detail 7"), std::string::npos) << message;
  }
}

TEST(LaunchEnv, ReadsTorchrunVariables) {
  ScopedEnv env;
  clear_launcher_vars(env);
  env.set("RANK", "3");
  env.set("LOCAL_RANK", "1");
  env.set("WORLD_SIZE", "8");
  env.set("LOCAL_WORLD_SIZE", "2");
  const auto launch = dtrain::util::read_launch_env();
  EXPECT_EQ(launch.source, "torchrun");
  EXPECT_EQ(launch.rank, 3);
  EXPECT_EQ(launch.local_rank, 1);
  EXPECT_EQ(launch.world_size, 8);
  EXPECT_EQ(launch.local_world_size, 2);
}

TEST(LaunchEnv, FallsBackToOpenMpiThenSlurm) {
  ScopedEnv env;
  clear_launcher_vars(env);
  env.set("SLURM_PROCID", "5");
  env.set("SLURM_NTASKS", "6");
  env.set("SLURM_LOCALID", "1");
  auto launch = dtrain::util::read_launch_env();
  EXPECT_EQ(launch.source, "slurm");
  EXPECT_EQ(launch.rank, 5);
  EXPECT_EQ(launch.world_size, 6);
  EXPECT_EQ(launch.local_rank, 1);

  env.set("OMPI_COMM_WORLD_RANK", "2");
  env.set("OMPI_COMM_WORLD_SIZE", "4");
  launch = dtrain::util::read_launch_env();
  EXPECT_EQ(launch.source, "openmpi");
  EXPECT_EQ(launch.rank, 2);
  EXPECT_EQ(launch.world_size, 4);
}

TEST(LaunchEnv, NoLauncherMeansNoRank) {
  ScopedEnv env;
  clear_launcher_vars(env);
  const auto launch = dtrain::util::read_launch_env();
  EXPECT_EQ(launch.source, "none");
  EXPECT_FALSE(launch.rank.has_value());
}

TEST(LaunchEnv, BadValueNamesTheVariable) {
  ScopedEnv env;
  clear_launcher_vars(env);
  env.set("RANK", "two");
  try {
    dtrain::util::read_launch_env();
    FAIL() << "a non-numeric RANK was accepted";
  } catch (const dtrain::Error& e) {
    EXPECT_NE(std::string(e.what()).find("RANK='two'"), std::string::npos) << e.what();
  }
  env.set("RANK", "-1");
  EXPECT_THROW(dtrain::util::read_launch_env(), dtrain::Error);
}

// On/off settings such as DTRAIN_MPI_BLOCKING_ALL_REDUCE, which is on by
// default: "true" must not quietly mean off.
TEST(LaunchEnv, AFlagIsZeroOrOneAndAnythingElseIsNamed) {
  ScopedEnv env;
  const char* name = "DTRAIN_TEST_FLAG";
  env.set(name, nullptr);
  EXPECT_FALSE(dtrain::util::env_flag(name).has_value());
  env.set(name, "1");
  EXPECT_EQ(dtrain::util::env_flag(name), true);
  env.set(name, "0");
  EXPECT_EQ(dtrain::util::env_flag(name), false);
  for (const char* bad : {"true", "2"}) {
    env.set(name, bad);
    try {
      dtrain::util::env_flag(name);
      FAIL() << name << "=" << bad << " was accepted";
    } catch (const dtrain::Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string(name) + "='" + bad + "'"), std::string::npos)
          << e.what();
    }
  }
}

TEST(Logging, EveryLineCarriesRankAndLocalRank) {
  ScopedEnv env;
  clear_launcher_vars(env);
  env.set("RANK", "3");
  env.set("LOCAL_RANK", "1");
  dtrain::util::init_logging();
  std::ostringstream captured;
  auto logger = spdlog::default_logger();
  logger->sinks().push_back(std::make_shared<spdlog::sinks::ostream_sink_mt>(captured));
  // Re-applying the pattern formats the new sink like the others.
  dtrain::util::set_log_rank(3, 1);
  EXPECT_EQ(dtrain::util::job_rank(), 3) << "what a program's error line names";
  spdlog::info("hello from a test");
  dtrain::util::set_log_rank(std::nullopt, std::nullopt);
  EXPECT_EQ(dtrain::util::job_rank(), std::nullopt);
  spdlog::info("no rank yet");
  logger->flush();
  const std::string text = captured.str();
  EXPECT_NE(text.find("[rank 3/local 1] [info] hello from a test"), std::string::npos) << text;
  EXPECT_NE(text.find("[rank -/local -] [info] no rank yet"), std::string::npos) << text;
  dtrain::util::init_logging();
}

TEST(Logging, LevelNamesAreChecked) {
  EXPECT_EQ(dtrain::util::parse_log_level("debug"), spdlog::level::debug);
  EXPECT_EQ(dtrain::util::parse_log_level("off"), spdlog::level::off);
  try {
    dtrain::util::parse_log_level("loud");
    FAIL() << "an unknown level was accepted";
  } catch (const dtrain::Error& e) {
    EXPECT_NE(std::string(e.what()).find("DTRAIN_LOG_LEVEL='loud'"), std::string::npos);
  }
}

TEST(Logging, LevelComesFromEnvironment) {
  ScopedEnv env;
  env.set("DTRAIN_LOG_LEVEL", "warn");
  dtrain::util::init_logging();
  EXPECT_EQ(spdlog::get_level(), spdlog::level::warn);
  env.set("DTRAIN_LOG_LEVEL", "nonsense");
  dtrain::util::init_logging();  // warns and falls back rather than failing
  EXPECT_EQ(spdlog::get_level(), spdlog::level::info);
}

TEST(Memory, PeakRssGrowsWithTouchedMemory) {
  const std::int64_t before = dtrain::util::peak_rss_bytes();
  EXPECT_GT(before, 0);
  constexpr std::size_t kBytes = 256 << 20;
  std::vector<char> block(kBytes, 1);  // touched, so resident
  const std::int64_t after = dtrain::util::peak_rss_bytes();
  EXPECT_GE(after, before);
  EXPECT_GE(dtrain::util::current_rss_bytes(), static_cast<std::int64_t>(kBytes));
  EXPECT_GE(after, static_cast<std::int64_t>(kBytes));
  EXPECT_EQ(block[kBytes - 1], 1);
}

// The CPU allocator keeps no peak statistics: reports say 0 rather than fail
// (the CUDA side is checked where a GPU is, by the training apps' GPU tests).
TEST(Memory, PeakDeviceMemoryIsZeroOnTheCpu) {
  dtrain::util::reset_peak_device_memory(c10::Device(c10::kCPU));
  EXPECT_EQ(dtrain::util::peak_device_mb(c10::Device(c10::kCPU)), 0);
}

// The allocation pattern of a training step: many blocks freed together, so
// the heap top falls free. Returns the page faults of the last rounds (the
// first round's are the heap's first growth).
std::int64_t faults_of_step_pattern(std::size_t blocks_per_round = 24,
                                    std::size_t block_bytes = 1 << 20) {
  auto minor_faults = [] {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<std::int64_t>(usage.ru_minflt);
  };
  std::int64_t start = 0;
  for (int round = 0; round < 6; ++round) {
    if (round == 1) {
      start = minor_faults();
    }
    std::vector<void*> blocks;
    for (std::size_t i = 0; i < blocks_per_round; ++i) {
      blocks.push_back(std::malloc(block_bytes));
      std::memset(blocks.back(), 1, block_bytes);
    }
    for (void* block : blocks) {
      std::free(block);
    }
  }
  return minor_faults() - start;
}

// Runs `body` in a forked child (the malloc policy is process-wide and set
// once) and returns what it wrote to the pipe.
std::int64_t value_from_child(const std::function<std::int64_t()>& body) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    const std::int64_t value = body();
    const bool written = write(fds[1], &value, sizeof value) == sizeof value;
    _exit(written ? 0 : 1);
  }
  std::int64_t value = -1;
  EXPECT_EQ(read(fds[0], &value, sizeof value), static_cast<ssize_t>(sizeof value));
  int status = 0;
  waitpid(pid, &status, 0);
  close(fds[0]);
  close(fds[1]);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  return value;
}

TEST(HostMemory, FreedStepMemoryIsNotFaultedInAgain) {
  // Five rounds touch 5 x 24 MiB = 30720 pages; glibc's defaults trim the
  // free heap top after each round, so most of them fault again.
  const std::int64_t with_defaults = value_from_child([] { return faults_of_step_pattern(); });
  const std::int64_t retained = value_from_child(
      [] { return dtrain::util::retain_freed_host_memory() ? faults_of_step_pattern() : -1; });
  EXPECT_GT(with_defaults, 10000) << "the pattern no longer reproduces glibc's trimming";
  EXPECT_GE(retained, 0) << "retain_freed_host_memory() was refused";
  EXPECT_LT(retained, 500) << "freed memory was handed back to the kernel";
}

TEST(HostMemory, BlocksAboveGlibcsLargestMmapThresholdStayToo) {
  // Blocks of 40 MiB are above the largest threshold glibc accepts (32
  // MiB): it maps each afresh unless mapping is off altogether.
  constexpr std::size_t kLargeBlock = 40u << 20;
  const std::int64_t with_defaults =
      value_from_child([] { return faults_of_step_pattern(3, kLargeBlock); });
  const std::int64_t retained = value_from_child([] {
    return dtrain::util::retain_freed_host_memory() ? faults_of_step_pattern(3, kLargeBlock) : -1;
  });
  EXPECT_GT(with_defaults, 10000) << "large blocks are no longer mapped per allocation";
  EXPECT_GE(retained, 0) << "retain_freed_host_memory() was refused";
  EXPECT_LT(retained, 500) << "large freed blocks were handed back to the kernel";
}

TEST(HostMemory, ReleaseSettingKeepsGlibcDefaults) {
  const std::int64_t in_force = value_from_child([] {
    setenv("DTRAIN_HOST_MEMORY", "release", 1);
    return dtrain::util::retain_freed_host_memory() ? 1 : 0;
  });
  EXPECT_EQ(in_force, 0);
  const std::int64_t misspelt = value_from_child([] {
    setenv("DTRAIN_HOST_MEMORY", "relase", 1);  // warns, keeps the policy
    return dtrain::util::retain_freed_host_memory() ? 1 : 0;
  });
  EXPECT_EQ(misspelt, 1);
}

}  // namespace
