#include "dtrain/ddp/broadcast.h"

#include <cstring>
#include <map>
#include <sstream>

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include "dtrain/dist/init.h"
#include "dtrain/util/errors.h"

namespace dtrain::ddp {
namespace {

dist::ProcessGroupPtr group_or_default(const dist::ProcessGroupPtr& group) {
  return group ? group : dist::default_group();
}

// One shape record per tensor: dtype, rank, numel, then up to kMaxDims
// sizes (further dims are covered by numel).
constexpr int kMaxDims = 6;
constexpr int kRecord = 3 + kMaxDims;

std::vector<std::int64_t> shape_record(const at::Tensor& tensor) {
  std::vector<std::int64_t> record(kRecord, 0);
  record[0] = static_cast<std::int64_t>(tensor.scalar_type());
  record[1] = tensor.dim();
  record[2] = tensor.numel();
  for (int d = 0; d < std::min<int>(kMaxDims, tensor.dim()); ++d) {
    record[3 + d] = tensor.size(d);
  }
  return record;
}

std::string describe_record(const std::int64_t* record) {
  std::vector<std::int64_t> sizes(record + 3,
                                  record + 3 + std::min<std::int64_t>(record[1], kMaxDims));
  return fmt::format("{} [{}]", c10::toString(static_cast<at::ScalarType>(record[0])),
                     fmt::join(sizes, ", "));
}

}  // namespace

void broadcast_tensors(const std::vector<at::Tensor>& tensors, int root,
                       const dist::ProcessGroupPtr& group) {
  const auto pg = group_or_default(group);
  DTRAIN_CHECK(root >= 0 && root < pg->size(),
               fmt::format("broadcast root {} is outside the group of {} ranks", root, pg->size()));
  at::NoGradGuard no_grad;
  std::map<std::pair<int, int>, std::vector<at::Tensor>> by_type;
  for (const at::Tensor& tensor : tensors) {
    if (tensor.defined() && tensor.numel() > 0) {
      by_type[{static_cast<int>(tensor.scalar_type()), static_cast<int>(tensor.device().type())}]
          .push_back(tensor);
    }
  }
  for (auto& [key, group_tensors] : by_type) {
    at::Tensor flat = at::flatten_dense_tensors(group_tensors);
    pg->broadcast(flat, {.root = root})->wait();
    if (pg->rank() != root) {
      auto values = at::unflatten_dense_tensors(flat, group_tensors);
      for (std::size_t i = 0; i < group_tensors.size(); ++i) {
        at::Tensor target = group_tensors[i];
        target.copy_(values[i]);
      }
    }
  }
}

void broadcast_parameters(const torch::nn::Module& module, int root,
                          const dist::ProcessGroupPtr& group) {
  std::vector<at::Tensor> tensors = module.parameters();
  for (const at::Tensor& buffer : module.buffers()) {
    tensors.push_back(buffer);
  }
  broadcast_tensors(tensors, root, group);
}

void broadcast_optimizer_state(torch::optim::Optimizer& optimizer, int root,
                               const dist::ProcessGroupPtr& group) {
  const auto pg = group_or_default(group);
  at::Tensor size = at::zeros({1}, at::kLong);
  std::string bytes;
  if (pg->rank() == root) {
    torch::serialize::OutputArchive archive;
    optimizer.save(archive);
    std::ostringstream out;
    archive.save_to(out);
    bytes = out.str();
    size.fill_(static_cast<std::int64_t>(bytes.size()));
  }
  pg->broadcast(size, {.root = root})->wait();
  at::Tensor payload = at::empty({size.item<std::int64_t>()}, at::kByte);
  if (pg->rank() == root) {
    std::memcpy(payload.data_ptr(), bytes.data(), bytes.size());
  }
  pg->broadcast(payload, {.root = root})->wait();
  if (pg->rank() != root) {
    std::istringstream in(std::string(static_cast<const char*>(payload.data_ptr()),
                                      static_cast<std::size_t>(payload.numel())));
    torch::serialize::InputArchive archive;
    archive.load_from(in);
    optimizer.load(archive);
  }
}

void verify_same_shapes(const std::vector<std::string>& names,
                        const std::vector<at::Tensor>& tensors,
                        const dist::ProcessGroupPtr& group) {
  const auto pg = group_or_default(group);
  const int world = pg->size();
  at::Tensor count = at::full({1}, static_cast<std::int64_t>(tensors.size()), at::kLong);
  std::vector<at::Tensor> counts(world);
  for (auto& c : counts) {
    c = at::empty({1}, at::kLong);
  }
  pg->all_gather(counts, count)->wait();
  std::int64_t most = 0;
  for (const auto& c : counts) {
    most = std::max(most, c.item<std::int64_t>());
  }
  // Records padded to the longest list with -1 so all_gather sees one shape.
  at::Tensor mine = at::full({most, kRecord}, -1, at::kLong);
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto record = shape_record(tensors[i]);
    std::copy(record.begin(), record.end(),
              mine[static_cast<std::int64_t>(i)].data_ptr<std::int64_t>());
  }
  std::vector<at::Tensor> all(world);
  for (auto& t : all) {
    t = at::empty({most, kRecord}, at::kLong);
  }
  pg->all_gather(all, mine)->wait();
  for (std::int64_t i = 0; i < most; ++i) {
    const std::int64_t* reference = all[0][i].data_ptr<std::int64_t>();
    for (int r = 1; r < world; ++r) {
      const std::int64_t* other = all[r][i].data_ptr<std::int64_t>();
      if (std::equal(reference, reference + kRecord, other)) {
        continue;
      }
      const std::string name = i < static_cast<std::int64_t>(names.size())
                                   ? "'" + names[static_cast<std::size_t>(i)] + "'"
                                   : fmt::format("#{}", i);
      const auto side = [](const std::int64_t* record) {
        return record[0] < 0 ? std::string("nothing") : describe_record(record);
      };
      throw Error(fmt::format(
          "parameters differ across ranks at parameter {} ({}): rank 0 has {}, rank {} has {} "
          "(rank 0 has {} parameters, rank {} has {}); every rank must build the same model",
          i, name, side(reference), r, side(other), counts[0].item<std::int64_t>(), r,
          counts[static_cast<std::size_t>(r)].item<std::int64_t>()));
    }
  }
}

}  // namespace dtrain::ddp
