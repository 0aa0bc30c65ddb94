#include "format.h"

#include <unistd.h>

#include <fmt/format.h>

namespace dtrain::examples {

std::string format_tensor(const at::Tensor& tensor) {
  const at::Tensor flat = tensor.to(at::kDouble).contiguous().view(-1);
  if (flat.numel() == 1) {
    return fmt::format("{:g}", flat.item<double>());
  }
  std::string out = "[";
  for (int64_t i = 0; i < flat.numel(); ++i) {
    out += (i == 0 ? "" : ", ") + fmt::format("{:g}", flat[i].item<double>());
  }
  return out + "]";
}

std::string format_tensors(const std::vector<at::Tensor>& tensors) {
  std::string out = "[";
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    out += (i == 0 ? "" : ", ") + format_tensor(tensors[i]);
  }
  return out + "]";
}

void print_line(const std::string& line) {
  // One write(2) per line: ranks share stdout, and a line must not be split.
  const std::string text = line + "\n";
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(STDOUT_FILENO, text.data() + done, text.size() - done);
    if (n <= 0) {
      return;
    }
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace dtrain::examples
