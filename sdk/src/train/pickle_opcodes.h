// Internal: the opcodes of Python's pickle format (its pickletools module
// documents each) that torch.save writes for tensors, dicts and the
// plain values beside them, protocols 2 to 5.
#pragma once

#include <cstdint>

namespace dtrain::train::detail::pickle {

enum Opcode : uint8_t {
  kMark = '(',
  kStop = '.',
  kPop = '0',
  kPopMark = '1',
  kDup = '2',
  kBinFloat = 'G',
  kBinInt = 'J',
  kBinInt1 = 'K',
  kBinInt2 = 'M',
  kNone = 'N',
  kBinPersId = 'Q',
  kReduce = 'R',
  kBinUnicode = 'X',
  kEmptyList = ']',
  kAppend = 'a',
  kBuild = 'b',
  kGlobal = 'c',
  kDict = 'd',
  kAppends = 'e',
  kBinGet = 'h',
  kLongBinGet = 'j',
  kList = 'l',
  kBinPut = 'q',
  kLongBinPut = 'r',
  kSetItem = 's',
  kTuple = 't',
  kSetItems = 'u',
  kEmptyDict = '}',
  kEmptyTuple = ')',
  kProto = 0x80,
  kNewObj = 0x81,
  kTuple1 = 0x85,
  kTuple2 = 0x86,
  kTuple3 = 0x87,
  kNewTrue = 0x88,
  kNewFalse = 0x89,
  kLong1 = 0x8a,
  kShortBinUnicode = 0x8c,
  kBinUnicode8 = 0x8d,
  kStackGlobal = 0x93,
  kMemoize = 0x94,
  kFrame = 0x95,
};

}  // namespace dtrain::train::detail::pickle
