#include "unused_parameters.h"

#include <algorithm>
#include <unordered_set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/csrc/autograd/variable.h>

namespace dtrain::ddp::detail {

std::vector<std::size_t> unreached_accumulators(
    const std::vector<at::Tensor>& outputs,
    const std::vector<std::shared_ptr<torch::autograd::Node>>& accumulators) {
  std::unordered_set<const torch::autograd::Node*> reached;
  std::vector<torch::autograd::Node*> stack;
  for (const at::Tensor& output : outputs) {
    if (output.defined() && output.requires_grad()) {
      auto edge = torch::autograd::impl::gradient_edge(output);
      if (edge.function) {
        stack.push_back(edge.function.get());
      }
    }
  }
  while (!stack.empty()) {
    torch::autograd::Node* node = stack.back();
    stack.pop_back();
    if (!reached.insert(node).second) {
      continue;
    }
    for (const auto& edge : node->next_edges()) {
      if (edge.function) {
        stack.push_back(edge.function.get());
      }
    }
  }
  std::vector<std::size_t> unused;
  for (std::size_t i = 0; i < accumulators.size(); ++i) {
    if (reached.count(accumulators[i].get()) == 0) {
      unused.push_back(i);
    }
  }
  return unused;
}

std::string missing_gradients_message(int rank, const std::vector<std::string>& names,
                                      const std::vector<bool>& ready) {
  std::vector<std::string> missing;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (!ready[i]) {
      missing.push_back("'" + names[i] + "'");
    }
  }
  const std::size_t shown = std::min<std::size_t>(missing.size(), 8);
  std::string list = fmt::format(
      "{}", fmt::join(missing.begin(), missing.begin() + static_cast<std::ptrdiff_t>(shown), ", "));
  if (missing.size() > shown) {
    list += fmt::format(" and {} more", missing.size() - shown);
  }
  return fmt::format(
      "rank {}: {} parameter(s) received no gradient in this backward pass: {}. If they are "
      "not used in forward, construct DistributedDataParallel with find_unused_parameters = "
      "true (or static_graph = true when the set of used parameters never changes)",
      rank, missing.size(), list);
}

}  // namespace dtrain::ddp::detail
