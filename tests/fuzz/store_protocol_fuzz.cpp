// libFuzzer target for the TCP store's request parser: whatever bytes a
// client sends, parse_request must answer NeedMore, Malformed or a complete
// request that re-encodes to the same frame -- never crash or read out of
// bounds (built with AddressSanitizer and UBSan).
#include <cstdint>
#include <cstdlib>
#include <span>

#include "store/store_protocol.h"

using namespace dtrain::store::protocol;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::span<const std::uint8_t> stream(data, size);
  while (!stream.empty()) {
    const ParsedRequest parsed = parse_request(stream);
    if (parsed.state != ParseState::kComplete) {
      break;
    }
    const Bytes again = encode_request(parsed.request);
    if (again.size() != parsed.consumed ||
        !std::equal(again.begin(), again.end(), stream.begin())) {
      std::abort();  // parse and encode disagree
    }
    stream = stream.subspan(parsed.consumed);
  }
  parse_response_body(std::span<const std::uint8_t>(data, size));
  return 0;
}
