#include "dtrain/ddp/bucket_assignment.h"

#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "dtrain/util/errors.h"

namespace dtrain::ddp {

std::vector<std::vector<std::size_t>> assign_buckets(const std::vector<at::Tensor>& tensors,
                                                     const std::vector<std::size_t>& order,
                                                     std::size_t first_bucket_bytes,
                                                     std::size_t bucket_bytes) {
  DTRAIN_CHECK(first_bucket_bytes > 0 && bucket_bytes > 0,
               fmt::format("bucket caps must be positive, got first {} and cap {} bytes",
                           first_bucket_bytes, bucket_bytes));
  // A bucket in progress per (dtype, device): tensors of different types
  // cannot share one flat buffer.
  using Key = std::tuple<int, int, int>;
  struct Open {
    std::vector<std::size_t> members;
    std::size_t bytes = 0;
    bool first = true;
  };
  std::map<Key, Open> open;
  // (position in `order` of the first member, members)
  std::vector<std::pair<std::size_t, std::vector<std::size_t>>> closed;
  std::vector<std::size_t> position(tensors.size(), tensors.size());
  for (std::size_t pos = 0; pos < order.size(); ++pos) {
    const std::size_t index = order[pos];
    DTRAIN_CHECK(index < tensors.size(),
                 fmt::format("bucket order names tensor {} of {}", index, tensors.size()));
    DTRAIN_CHECK(position[index] == tensors.size(),
                 fmt::format("bucket order names tensor {} twice", index));
    position[index] = pos;
    const at::Tensor& tensor = tensors[index];
    const Key key{static_cast<int>(tensor.scalar_type()), static_cast<int>(tensor.device().type()),
                  tensor.device().index()};
    Open& bucket = open[key];
    bucket.members.push_back(index);
    bucket.bytes += static_cast<std::size_t>(tensor.numel()) * tensor.element_size();
    const std::size_t cap = bucket.first ? first_bucket_bytes : bucket_bytes;
    if (bucket.bytes >= cap) {
      closed.emplace_back(position[bucket.members.front()], std::move(bucket.members));
      bucket = Open{{}, 0, false};
    }
  }
  for (auto& [key, bucket] : open) {
    if (!bucket.members.empty()) {
      closed.emplace_back(position[bucket.members.front()], std::move(bucket.members));
    }
  }
  std::sort(closed.begin(), closed.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::vector<std::size_t>> buckets;
  buckets.reserve(closed.size());
  for (auto& entry : closed) {
    buckets.push_back(std::move(entry.second));
  }
  return buckets;
}

}  // namespace dtrain::ddp
