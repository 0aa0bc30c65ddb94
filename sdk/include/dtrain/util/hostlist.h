// Slurm's host lists, as SLURM_JOB_NODELIST gives them: "node[01-03,07],gpu7"
// names node01, node02, node03, node07 and gpu7, in that order. The common
// forms are parsed here because `scontrol show hostnames`, the reference,
// may not be on a compute node's PATH: comma-separated items, each a name
// with bracketed groups of numbers and ranges (zero-padded to the width of
// the range's first number), several groups in one name multiplying out.
//
// Throws dtrain::Error naming the list when it is malformed (an unclosed
// bracket, a range that runs backwards, an empty item).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dtrain::util {

std::vector<std::string> expand_hostlist(std::string_view list);

// The first host of `list`, without expanding the rest.
std::string first_host(std::string_view list);

}  // namespace dtrain::util
