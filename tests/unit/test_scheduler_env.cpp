// What schedulers set, read as env:// and dtrun read it: Slurm's host lists
// (against the forms `scontrol show hostnames` expands), the master a Slurm
// job's ranks derive with nothing exported, and the variables the PyTorch
// training operator sets in its pods (kubeflow training-operator, pytorch
// envvar.go and master.go: MASTER_*, PET_MASTER_*, WORLD_SIZE, RANK,
// PET_NPROC_PER_NODE, PET_NODE_RANK, PET_NNODES).
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "dtrain/util/hostlist.h"
#include "dtrain/util/scheduler_env.h"
#include "expect_error.h"

namespace {

using dtrain::testing::expect_error;
using dtrain::util::EnvLookup;
using Strings = std::vector<std::string>;

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    const auto found = vars.find(name);
    if (found == vars.end() || found->second.empty()) {
      return std::nullopt;
    }
    return found->second;
  };
}

TEST(Hostlist, ExpandsTheFormsScontrolShowHostnamesExpands) {
  using dtrain::util::expand_hostlist;
  EXPECT_EQ(expand_hostlist("node7"), Strings{"node7"});
  EXPECT_EQ(expand_hostlist("node[01-03,07]"), (Strings{"node01", "node02", "node03", "node07"}));
  EXPECT_EQ(expand_hostlist("gpu[8-11],cpu3"), (Strings{"gpu8", "gpu9", "gpu10", "gpu11", "cpu3"}));
  EXPECT_EQ(expand_hostlist("n[098-101]"), (Strings{"n098", "n099", "n100", "n101"}));
  EXPECT_EQ(expand_hostlist("rack[1-2]-n[1-2]"),
            (Strings{"rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"}));
  EXPECT_EQ(expand_hostlist("a[1-2].cluster,b"), (Strings{"a1.cluster", "a2.cluster", "b"}));
  EXPECT_EQ(dtrain::util::first_host("node[01-03,07],gpu1"), "node01");
  EXPECT_EQ(dtrain::util::first_host("node-a,node-b"), "node-a");
}

TEST(Hostlist, MalformedListsNameTheList) {
  using dtrain::util::expand_hostlist;
  expect_error([] { expand_hostlist("node[01-03"); }, "'node[01-03' leaves a bracket open");
  expect_error([] { expand_hostlist("node[3-1]"); }, "the range '3-1' runs backwards");
  expect_error([] { expand_hostlist("a,,b"); }, "empty item");
  expect_error([] { expand_hostlist("node[x-2]"); }, "'x' is not a number");
  expect_error([] { expand_hostlist("node]"); }, "closes a bracket it did not open");
  expect_error([] { expand_hostlist(""); }, "the host list is empty");
}

TEST(SlurmMaster, FirstNodeAndJobIdPortWithNothingExported) {
  const EnvLookup env = env_of({{"SLURM_JOB_ID", "123456"},
                                {"SLURM_JOB_NODELIST", "gpu[07-08]"},
                                {"SLURM_NODELIST", "ignored"},
                                {"SLURM_PROCID", "1"},
                                {"SLURM_NTASKS", "8"}});
  const auto addr = dtrain::util::master_addr_from(env);
  const auto port = dtrain::util::master_port_from(env);
  ASSERT_TRUE(addr && port);
  EXPECT_EQ(addr->value, "gpu07");
  EXPECT_TRUE(addr->derived);
  EXPECT_EQ(addr->from, "the first node of SLURM_JOB_NODELIST=gpu[07-08]");
  EXPECT_EQ(port->value, std::to_string(15000 + 123456 % 20000));
  // The older name alone (Slurm before 19.05 in batch scripts).
  const auto old =
      dtrain::util::master_addr_from(env_of({{"SLURM_JOB_ID", "5"}, {"SLURM_NODELIST", "c[3-4]"}}));
  ASSERT_TRUE(old);
  EXPECT_EQ(old->value, "c3");
}

TEST(SlurmMaster, WhatTheUserExportedWinsEachOnItsOwn) {
  const EnvLookup env = env_of(
      {{"SLURM_JOB_ID", "77"}, {"SLURM_JOB_NODELIST", "node[1-2]"}, {"MASTER_PORT", "29500"}});
  EXPECT_EQ(dtrain::util::master_addr_from(env)->value, "node1");
  EXPECT_EQ(dtrain::util::master_port_from(env)->value, "29500");
  EXPECT_FALSE(dtrain::util::master_port_from(env)->derived);
  const EnvLookup named = env_of(
      {{"SLURM_JOB_ID", "77"}, {"SLURM_JOB_NODELIST", "node[1-2]"}, {"MASTER_ADDR", "10.0.0.9"}});
  EXPECT_EQ(dtrain::util::master_addr_from(named)->value, "10.0.0.9");
  EXPECT_EQ(dtrain::util::master_port_from(named)->value, "15077");
  // Outside a job, nothing is derived.
  EXPECT_FALSE(dtrain::util::master_addr_from(env_of({{"SLURM_NODELIST", "a"}})));
  EXPECT_FALSE(dtrain::util::master_port_from(env_of({})));
  expect_error(
      [] {
        dtrain::util::master_port_from(env_of({{"SLURM_JOB_ID", "12x"}}));
      },
      "SLURM_JOB_ID='12x' is not a non-negative integer");
}

// A PyTorchJob with a Master and 2 Workers, nprocPerNode 2: the variables of
// worker 0's pod, as the operator sets them (master.go, envvar.go).
std::map<std::string, std::string> operator_worker_pod() {
  return {{"PYTHONUNBUFFERED", "0"},
          {"MASTER_PORT", "23456"},
          {"PET_MASTER_PORT", "23456"},
          {"MASTER_ADDR", "pytorch-dist-master-0"},
          {"PET_MASTER_ADDR", "pytorch-dist-master-0"},
          {"WORLD_SIZE", "6"},
          {"RANK", "1"},
          {"PET_NPROC_PER_NODE", "2"},
          {"PET_NODE_RANK", "1"},
          {"PET_NNODES", "3"}};
}

TEST(OperatorPod, MapsTheOperatorsVariables) {
  const auto pod = dtrain::util::operator_pod_env(env_of(operator_worker_pod()));
  ASSERT_TRUE(pod);
  EXPECT_EQ(pod->nnodes, "3");
  EXPECT_EQ(pod->nproc_per_node, "2");
  EXPECT_EQ(pod->node_rank, 1);
  EXPECT_EQ(pod->world_size, 6);
  EXPECT_EQ(dtrain::util::master_addr_from(env_of(operator_worker_pod()))->value,
            "pytorch-dist-master-0");
  EXPECT_EQ(dtrain::util::master_port_from(env_of(operator_worker_pod()))->value, "23456");
  // Elastic (no Master replica): PET_* alone, nnodes as MIN:MAX.
  const auto elastic =
      dtrain::util::operator_pod_env(env_of({{"PET_NNODES", "1:3"},
                                             {"PET_NPROC_PER_NODE", "auto"},
                                             {"PET_RDZV_BACKEND", "c10d"},
                                             {"PET_RDZV_ENDPOINT", "job-worker-0:29400"}}));
  ASSERT_TRUE(elastic);
  EXPECT_EQ(elastic->nnodes, "1:3");
  EXPECT_FALSE(elastic->node_rank);
  EXPECT_FALSE(dtrain::util::operator_pod_env(env_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}})));
  // Only PET_MASTER_* set: env:// still finds the master.
  EXPECT_EQ(dtrain::util::master_addr_from(env_of({{"PET_MASTER_ADDR", "m-0"}}))->value, "m-0");
}

TEST(OperatorPod, SeveralProcessesPerPodNeedALauncher) {
  // RANK is the pod's: a program started straight from the pod must not take it as its own.
  expect_error([] { dtrain::util::check_not_bare_operator_pod(env_of(operator_worker_pod())); },
               "PET_NPROC_PER_NODE=2 asks for 2 processes in this pod, but it was started "
               "without a launcher");
  // dtrun's workers (LOCAL_RANK), one process per pod, or auto: RANK is the process's.
  auto under_dtrun = operator_worker_pod();
  under_dtrun["LOCAL_RANK"] = "1";
  dtrain::util::check_not_bare_operator_pod(env_of(under_dtrun));
  auto one_per_pod = operator_worker_pod();
  one_per_pod["PET_NPROC_PER_NODE"] = "1";
  dtrain::util::check_not_bare_operator_pod(env_of(one_per_pod));
  one_per_pod["PET_NPROC_PER_NODE"] = "auto";
  dtrain::util::check_not_bare_operator_pod(env_of(one_per_pod));
}

TEST(SlurmStep, OneDtrunPerNode) {
  using dtrain::util::check_one_launcher_per_node;
  const auto step = [](const char* tasks, const char* nodes) {
    return env_of({{"SLURM_JOB_ID", "9"},
                   {"SLURM_STEP_ID", "0"},
                   {"SLURM_STEP_NUM_TASKS", tasks},
                   {"SLURM_STEP_NUM_NODES", nodes}});
  };
  check_one_launcher_per_node(step("2", "2"), 2, 2);
  check_one_launcher_per_node(step("2", "2"), 1, 4);
  check_one_launcher_per_node(env_of({{"SLURM_JOB_ID", "9"}}), 1, 1);  // the batch script
  expect_error([&] { check_one_launcher_per_node(step("4", "1"), 1, 1); },
               "this srun step has 4 tasks on 1 node(s) (SLURM_STEP_NUM_TASKS=4, "
               "SLURM_STEP_NUM_NODES=1): start it with `srun --ntasks-per-node=1 dtrun ...`");
  expect_error([&] { check_one_launcher_per_node(step("2", "2"), 1, 1); },
               "dtrun --nnodes 1 disagrees with this srun step's 2 node(s)");
}

}  // namespace
