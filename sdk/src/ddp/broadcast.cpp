#include "dtrain/ddp/broadcast.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <sstream>
#include <typeinfo>

#include <ATen/ATen.h>
#include <c10/util/Type.h>
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

// One shape record per tensor: dtype, rank, numel, requires_grad (1 or 0
// when compared, else 0), then up to kMaxDims sizes (further dims are
// covered by numel). An undefined tensor has dtype -2.
constexpr int kMaxDims = 6;
constexpr int kRecord = 4 + kMaxDims;

std::vector<std::int64_t> shape_record(const at::Tensor& tensor, bool with_requires_grad) {
  std::vector<std::int64_t> record(kRecord, 0);
  if (!tensor.defined()) {
    record[0] = -2;
    return record;
  }
  record[0] = static_cast<std::int64_t>(tensor.scalar_type());
  record[1] = tensor.dim();
  record[2] = tensor.numel();
  record[3] = with_requires_grad && tensor.requires_grad() ? 1 : 0;
  for (int d = 0; d < std::min<int>(kMaxDims, tensor.dim()); ++d) {
    record[4 + d] = tensor.size(d);
  }
  return record;
}

std::string describe_record(const std::int64_t* record, bool with_requires_grad) {
  if (record[0] == -1) {
    return "nothing";
  }
  if (record[0] == -2) {
    return "an undefined tensor";
  }
  std::vector<std::int64_t> sizes(record + 4,
                                  record + 4 + std::min<std::int64_t>(record[1], kMaxDims));
  std::string text = fmt::format("{} [{}]", c10::toString(static_cast<at::ScalarType>(record[0])),
                                 fmt::join(sizes, ", "));
  if (with_requires_grad) {
    text += record[3] != 0 ? " (requires grad)" : " (frozen, requires_grad false)";
  }
  return text;
}

// all_gather of one int64 vector per rank, of any length: the lengths
// first, then the vectors padded with -1 to the longest. Every rank gets
// every rank's vector (unpadded), in rank order.
std::vector<std::vector<std::int64_t>> all_gather_vectors(const std::vector<std::int64_t>& mine,
                                                          dist::ProcessGroup& pg) {
  const int world = pg.size();
  at::Tensor length = at::full({1}, static_cast<std::int64_t>(mine.size()), at::kLong);
  std::vector<at::Tensor> lengths(world);
  for (auto& l : lengths) {
    l = at::empty({1}, at::kLong);
  }
  dist::issue_and_wait([&] { return pg.all_gather(lengths, length); });
  std::int64_t longest = 0;
  for (const auto& l : lengths) {
    longest = std::max(longest, l.item<std::int64_t>());
  }
  at::Tensor padded = at::full({std::max<std::int64_t>(longest, 1)}, -1, at::kLong);
  std::copy(mine.begin(), mine.end(), padded.data_ptr<std::int64_t>());
  std::vector<at::Tensor> all(world);
  for (auto& t : all) {
    t = at::empty_like(padded);
  }
  dist::issue_and_wait([&] { return pg.all_gather(all, padded); });
  std::vector<std::vector<std::int64_t>> result(world);
  for (int r = 0; r < world; ++r) {
    const std::int64_t* data = all[r].data_ptr<std::int64_t>();
    result[r].assign(data, data + lengths[r].item<std::int64_t>());
  }
  return result;
}

// verify_same_shapes, comparing every rank with `reference`; `context`
// prefixes the message and `advice` ends it. With `with_requires_grad` the
// ranks must also agree on which tensors require grad.
void check_same_tensors(const std::string& context, const std::string& advice,
                        const std::vector<std::string>& names,
                        const std::vector<at::Tensor>& tensors, dist::ProcessGroup& pg,
                        int reference, bool with_requires_grad) {
  const int world = pg.size();
  at::Tensor count = at::full({1}, static_cast<std::int64_t>(tensors.size()), at::kLong);
  std::vector<at::Tensor> counts(world);
  for (auto& c : counts) {
    c = at::empty({1}, at::kLong);
  }
  dist::issue_and_wait([&] { return pg.all_gather(counts, count); });
  std::int64_t most = 0;
  std::int64_t fewest = std::numeric_limits<std::int64_t>::max();
  for (const auto& c : counts) {
    most = std::max(most, c.item<std::int64_t>());
    fewest = std::min(fewest, c.item<std::int64_t>());
  }
  // Records padded to the longest list with -1 so all_gather sees one shape.
  at::Tensor mine = at::full({most, kRecord}, -1, at::kLong);
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto record = shape_record(tensors[i], with_requires_grad);
    std::copy(record.begin(), record.end(),
              mine[static_cast<std::int64_t>(i)].data_ptr<std::int64_t>());
  }
  std::vector<at::Tensor> all(world);
  for (auto& t : all) {
    t = at::empty({most, kRecord}, at::kLong);
  }
  dist::issue_and_wait([&] { return pg.all_gather(all, mine); });
  for (std::int64_t i = 0; i < most; ++i) {
    const std::int64_t* expected =
        all[static_cast<std::size_t>(reference)][i].data_ptr<std::int64_t>();
    for (int r = 0; r < world; ++r) {
      const std::int64_t* other = all[static_cast<std::size_t>(r)][i].data_ptr<std::int64_t>();
      if (r == reference || std::equal(expected, expected + kRecord, other)) {
        continue;
      }
      // Every rank must print the same message: a name only where every
      // rank has one (beyond the shortest list, some ranks have none).
      const std::string name = i < fewest && i < static_cast<std::int64_t>(names.size())
                                   ? " ('" + names[static_cast<std::size_t>(i)] + "')"
                                   : "";
      throw Error(fmt::format(
          "{}parameters differ across ranks at parameter {}{}: rank {} has {}, rank {} has {} "
          "(rank {} has {} parameters, rank {} has {}); {}",
          context, i, name, reference, describe_record(expected, with_requires_grad), r,
          describe_record(other, with_requires_grad), reference,
          counts[static_cast<std::size_t>(reference)].item<std::int64_t>(), r,
          counts[static_cast<std::size_t>(r)].item<std::int64_t>(), advice));
    }
  }
}

// The optimizer's type, its parameter groups' sizes and its parameters'
// shapes must agree before root's state is loaded elsewhere: LibTorch's
// load fails only on the receiving ranks (with an internal assert for
// another optimizer type) or not at all (other shapes, until step()).
// Every rank runs these collectives and raises the same error.
void check_same_optimizer(torch::optim::Optimizer& optimizer, int root, dist::ProcessGroup& pg) {
  constexpr const char* kContext = "broadcast_optimizer_state: ";
  constexpr const char* kAdvice =
      "every rank must build the same optimizer over the same parameters";
  // [groups, size of each group, the type name's bytes]
  const auto& groups = optimizer.param_groups();
  std::vector<std::int64_t> header = {static_cast<std::int64_t>(groups.size())};
  for (const auto& g : groups) {
    header.push_back(static_cast<std::int64_t>(g.params().size()));
  }
  const std::string type = c10::demangle(typeid(optimizer).name());
  header.insert(header.end(), type.begin(), type.end());
  const auto all = all_gather_vectors(header, pg);
  const auto type_of = [](const std::vector<std::int64_t>& h) {
    std::string name;
    for (auto c = h.begin() + 1 + h[0]; c != h.end(); ++c) {
      name.push_back(static_cast<char>(*c));
    }
    return name;
  };
  const auto& expected = all[static_cast<std::size_t>(root)];
  for (int r = 0; r < pg.size(); ++r) {
    const auto& other = all[static_cast<std::size_t>(r)];
    if (type_of(other) != type_of(expected)) {
      throw Error(fmt::format(
          "{}the optimizer type differs across ranks: root rank {} has {}, rank {} has {}; {}",
          kContext, root, type_of(expected), r, type_of(other), kAdvice));
    }
    if (other[0] != expected[0]) {
      throw Error(fmt::format(
          "{}the number of parameter groups differs across ranks: root rank {} has {}, rank {} "
          "has {}; {}",
          kContext, root, expected[0], r, other[0], kAdvice));
    }
    for (std::int64_t g = 0; g < expected[0]; ++g) {
      const auto at = static_cast<std::size_t>(1 + g);
      if (other[at] != expected[at]) {
        throw Error(fmt::format(
            "{}the number of parameters in param_groups[{}] differs across ranks: root rank {} "
            "has {}, rank {} has {}; {}",
            kContext, g, root, expected[at], r, other[at], kAdvice));
      }
    }
  }
  std::vector<std::string> names;
  std::vector<at::Tensor> parameters;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    for (std::size_t p = 0; p < groups[g].params().size(); ++p) {
      names.push_back(fmt::format("param_groups[{}].params[{}]", g, p));
      parameters.push_back(groups[g].params()[p]);
    }
  }
  check_same_tensors(kContext, kAdvice, names, parameters, pg, root,
                     /*with_requires_grad=*/false);
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
    dist::issue_and_wait([&] { return pg->broadcast(flat, {.root = root}); });
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
  DTRAIN_CHECK(root >= 0 && root < pg->size(),
               fmt::format("broadcast_optimizer_state: root {} is outside the group of {} ranks",
                           root, pg->size()));
  check_same_optimizer(optimizer, root, *pg);
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
  dist::issue_and_wait([&] { return pg->broadcast(size, {.root = root}); });
  at::Tensor payload = at::empty({size.item<std::int64_t>()}, at::kByte);
  if (pg->rank() == root) {
    std::memcpy(payload.data_ptr(), bytes.data(), bytes.size());
  }
  dist::issue_and_wait([&] { return pg->broadcast(payload, {.root = root}); });
  if (pg->rank() != root) {
    std::istringstream in(std::string(static_cast<const char*>(payload.data_ptr()),
                                      static_cast<std::size_t>(payload.numel())));
    torch::serialize::InputArchive archive;
    archive.load_from(in);
    // Optimizer::load only adds the entries root has: without clearing,
    // state root lacks (a rank that stepped, a fresh root) would survive.
    // The old state comes back if load throws.
    auto previous = std::move(optimizer.state());
    optimizer.state().clear();
    try {
      optimizer.load(archive);
    } catch (...) {
      optimizer.state() = std::move(previous);
      throw;
    }
  }
}

void verify_same_shapes(const std::vector<std::string>& names,
                        const std::vector<at::Tensor>& tensors,
                        const dist::ProcessGroupPtr& group) {
  check_same_tensors("", "every rank must build the same model", names, tensors,
                     *group_or_default(group), /*reference=*/0, /*with_requires_grad=*/false);
}

void verify_same_parameters(const std::string& context, const std::vector<std::string>& names,
                            const std::vector<at::Tensor>& parameters,
                            const dist::ProcessGroupPtr& group) {
  check_same_tensors(context.empty() ? context : context + ": ",
                     "every rank must build the same model, with the same parameters frozen", names,
                     parameters, *group_or_default(group), /*reference=*/0,
                     /*with_requires_grad=*/true);
}

}  // namespace dtrain::ddp
