// The words that name an enum's values in flags, settings and logs, in one
// table per enum: reading a word and naming a value both look it up there,
// so the two cannot drift apart.
//
//   const EnumWords<Precision> words{{"off", Precision::kFp32}, {"bf16", Precision::kBf16}};
//   words.value("bf16");             // Precision::kBf16
//   words.word(Precision::kFp32);    // "off"
//
// Immutable after construction, so safe to share between threads.
#pragma once

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dtrain/util/errors.h"

namespace dtrain::util {

template <typename E>
class EnumWords {
 public:
  EnumWords(std::initializer_list<std::pair<std::string, E>> words) : words_(words) {}

  // The value named `word`; throws dtrain::Error naming the word and the
  // choices when none is.
  E value(const std::string& word) const {
    for (const auto& [name, value] : words_) {
      if (name == word) {
        return value;
      }
    }
    throw Error(fmt::format("'{}' is not one of {}", word, fmt::join(words(), ", ")));
  }

  // The word of `value`; throws dtrain::InternalError when the table lacks it.
  const std::string& word(E value) const {
    for (const auto& [name, named] : words_) {
      if (named == value) {
        return name;
      }
    }
    DTRAIN_INTERNAL_ASSERT(false, "an enum value without a word: ", static_cast<int>(value));
    return words_.front().first;
  }

  // Every word, in the table's order.
  std::vector<std::string> words() const {
    std::vector<std::string> all;
    for (const auto& entry : words_) {
      all.push_back(entry.first);
    }
    return all;
  }

 private:
  std::vector<std::pair<std::string, E>> words_;
};

}  // namespace dtrain::util
