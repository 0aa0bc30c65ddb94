#include "dtrain/dist/process_group.h"

#include <algorithm>
#include <array>
#include <functional>
#include <numeric>

namespace dtrain::dist {

std::string to_string(ReduceOp op) {
  constexpr std::array<const char*, 5> kNames = {"SUM", "PRODUCT", "MIN", "MAX", "AVG"};
  const auto index = static_cast<std::size_t>(op);
  return index < kNames.size() ? kNames[index] : "UNKNOWN";
}

ProcessGroup::ProcessGroup(int rank, int size, std::string name)
    : rank_(rank), size_(size), name_(std::move(name)) {
  DTRAIN_CHECK(size >= 1, "process group '", name_, "': size must be >= 1, got ", size);
  DTRAIN_CHECK(rank >= 0 && rank < size, "process group '", name_, "': rank ", rank,
               " is outside the world of size ", size);
  global_ranks_.resize(size_);
  std::iota(global_ranks_.begin(), global_ranks_.end(), 0);
}

void ProcessGroup::set_global_ranks(std::vector<int> ranks) {
  DTRAIN_CHECK(static_cast<int>(ranks.size()) == size_, "process group '", name_,
               "': ", ranks.size(), " global ranks for a group of size ", size_);
  DTRAIN_CHECK(
      std::adjacent_find(ranks.begin(), ranks.end(), std::greater_equal<>()) == ranks.end(),
      "process group '", name_, "': global ranks must be distinct and ascending");
  global_ranks_ = std::move(ranks);
}

void ProcessGroup::unsupported(const std::string& op) const {
  throw Error("backend " + backend_name() + " does not support " + op);
}

std::string ProcessGroup::describe(const std::string& op) const {
  return op + " on group '" + name_ + "' (" + backend_name() + "), rank " + std::to_string(rank_) +
         " of " + std::to_string(size_);
}

WorkPtr ProcessGroup::send(const at::Tensor&, int, int) {
  unsupported("send");
}
WorkPtr ProcessGroup::recv(at::Tensor&, int, int) {
  unsupported("recv");
}
WorkPtr ProcessGroup::broadcast(at::Tensor&, const BroadcastOptions&) {
  unsupported("broadcast");
}
WorkPtr ProcessGroup::all_reduce(at::Tensor&, const AllreduceOptions&) {
  unsupported("all_reduce");
}
WorkPtr ProcessGroup::reduce(at::Tensor&, const ReduceOptions&) {
  unsupported("reduce");
}
WorkPtr ProcessGroup::all_gather(std::vector<at::Tensor>&, const at::Tensor&,
                                 const CollectiveOptions&) {
  unsupported("all_gather");
}
WorkPtr ProcessGroup::gather(std::vector<at::Tensor>&, const at::Tensor&, const RootOptions&) {
  unsupported("gather");
}
WorkPtr ProcessGroup::scatter(at::Tensor&, const std::vector<at::Tensor>&, const RootOptions&) {
  unsupported("scatter");
}
WorkPtr ProcessGroup::reduce_scatter(at::Tensor&, const std::vector<at::Tensor>&,
                                     const AllreduceOptions&) {
  unsupported("reduce_scatter");
}
WorkPtr ProcessGroup::all_to_all(std::vector<at::Tensor>&, const std::vector<at::Tensor>&,
                                 const CollectiveOptions&) {
  unsupported("all_to_all");
}
WorkPtr ProcessGroup::barrier(const CollectiveOptions&) {
  unsupported("barrier");
}

}  // namespace dtrain::dist
