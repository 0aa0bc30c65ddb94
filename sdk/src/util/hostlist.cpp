#include "dtrain/util/hostlist.h"

#include <charconv>

#include "dtrain/util/errors.h"

namespace dtrain::util {

namespace {

// The list's items: split at commas outside brackets.
std::vector<std::string_view> items_of(std::string_view list) {
  std::vector<std::string_view> items;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    if (i == list.size() || (list[i] == ',' && depth == 0)) {
      DTRAIN_CHECK(i > start, "host list '", list, "' has an empty item at character ", start + 1);
      items.push_back(list.substr(start, i - start));
      start = i + 1;
    } else if (list[i] == '[') {
      DTRAIN_CHECK(++depth == 1, "host list '", list, "' nests brackets at character ", i + 1);
    } else if (list[i] == ']') {
      DTRAIN_CHECK(--depth == 0, "host list '", list, "' closes a bracket it did not open at ",
                   "character ", i + 1);
    }
  }
  DTRAIN_CHECK(depth == 0, "host list '", list, "' leaves a bracket open");
  return items;
}

long number_in(std::string_view digits, std::string_view list) {
  long value = -1;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  DTRAIN_CHECK(!digits.empty() && ec == std::errc() && end == digits.data() + digits.size(),
               "host list '", list, "': '", digits, "' is not a number (expected N or N-M)");
  return value;
}

// The names one bracket group stands for: "01-03,07" -> 01, 02, 03, 07.
std::vector<std::string> numbers_of(std::string_view group, std::string_view list) {
  std::vector<std::string> numbers;
  for (std::string_view part : items_of(group)) {
    const size_t dash = part.find('-');
    const std::string_view low = part.substr(0, dash);
    const long first = number_in(low, list);
    const long last =
        dash == std::string_view::npos ? first : number_in(part.substr(dash + 1), list);
    DTRAIN_CHECK(first <= last, "host list '", list, "': the range '", part, "' runs backwards");
    for (long n = first; n <= last; ++n) {
      std::string text = std::to_string(n);
      if (text.size() < low.size()) {
        text.insert(0, low.size() - text.size(), '0');  // node[01-10]: the width of "01"
      }
      numbers.push_back(std::move(text));
    }
  }
  return numbers;
}

// Appends to `out` every name `item` stands for, each after `prefix`.
void expand_item(std::string_view item, const std::string& prefix, std::string_view list,
                 std::vector<std::string>& out, size_t limit) {
  const size_t open = item.find('[');
  if (open == std::string_view::npos) {
    out.push_back(prefix + std::string(item));
    return;
  }
  const size_t close = item.find(']', open);
  const std::string head = prefix + std::string(item.substr(0, open));
  for (const std::string& number : numbers_of(item.substr(open + 1, close - open - 1), list)) {
    expand_item(item.substr(close + 1), head + number, list, out, limit);
    if (out.size() >= limit) {
      return;
    }
  }
}

std::vector<std::string> expand(std::string_view list, size_t limit) {
  DTRAIN_CHECK(!list.empty(), "the host list is empty");
  std::vector<std::string> hosts;
  for (std::string_view item : items_of(list)) {
    expand_item(item, "", list, hosts, limit);
    if (hosts.size() >= limit) {
      break;
    }
  }
  return hosts;
}

}  // namespace

std::vector<std::string> expand_hostlist(std::string_view list) {
  return expand(list, static_cast<size_t>(-1));
}

std::string first_host(std::string_view list) {
  return expand(list, 1).front();
}

}  // namespace dtrain::util
