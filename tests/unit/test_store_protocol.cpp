// The TCP store's wire format: round trips, partial frames, and every kind
// of malformed input the server must reject rather than obey.
#include <gtest/gtest.h>

#include "store/store_protocol.h"

namespace {

using namespace dtrain::store::protocol;

Request sample(Op op) {
  Request request;
  request.op = op;
  request.keys = {"key/with/slashes"};
  if (op == Op::kCheck || op == Op::kWait) {
    request.keys = {"a", "", "c"};
  }
  request.value = {0, 1, 2, 255};
  request.expected = {9, 8};
  request.number = -1234567890123;
  return request;
}

TEST(StoreProtocol, EveryRequestRoundTrips) {
  for (int op = 1; op <= 9; ++op) {
    const Request request = sample(static_cast<Op>(op));
    const Bytes frame = encode_request(request);
    const ParsedRequest parsed = parse_request(frame);
    ASSERT_EQ(parsed.state, ParseState::kComplete) << "op " << op << ": " << parsed.problem;
    EXPECT_EQ(parsed.consumed, frame.size());
    EXPECT_EQ(parsed.request.op, request.op);
    const Op o = request.op;
    if (o != Op::kNumKeys && o != Op::kPing) {
      EXPECT_EQ(parsed.request.keys, request.keys) << "op " << op;
    }
    if (o == Op::kSet || o == Op::kCompareSet) {
      EXPECT_EQ(parsed.request.value, request.value);
    }
    if (o == Op::kCompareSet) {
      EXPECT_EQ(parsed.request.expected, request.expected);
    }
    if (o == Op::kGet || o == Op::kAdd || o == Op::kWait) {
      EXPECT_EQ(parsed.request.number, request.number);
    }
  }
}

TEST(StoreProtocol, ResponseRoundTrips) {
  Response response;
  response.status = Status::kTimeout;
  response.value = {1, 2, 3};
  response.number = 42;
  const Bytes frame = encode_response(response);
  auto parsed = parse_response_body(std::span<const std::uint8_t>(frame).subspan(4));
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->status, Status::kTimeout);
  EXPECT_EQ(parsed->value, response.value);
  EXPECT_EQ(parsed->number, 42);
  EXPECT_FALSE(parse_response_body(std::span<const std::uint8_t>(frame).subspan(4, 3)).has_value());
}

TEST(StoreProtocol, EveryPrefixOfAFrameNeedsMore) {
  const Bytes frame = encode_request(sample(Op::kCompareSet));
  for (std::size_t n = 0; n < frame.size(); ++n) {
    EXPECT_EQ(parse_request(std::span<const std::uint8_t>(frame).first(n)).state,
              ParseState::kNeedMore)
        << n << " bytes";
  }
}

TEST(StoreProtocol, TwoFramesInOneStream) {
  Bytes stream = encode_request(sample(Op::kSet));
  const std::size_t first = stream.size();
  const Bytes second = encode_request(sample(Op::kPing));
  stream.insert(stream.end(), second.begin(), second.end());
  const auto parsed = parse_request(stream);
  ASSERT_EQ(parsed.state, ParseState::kComplete);
  EXPECT_EQ(parsed.consumed, first);
  const auto next = parse_request(std::span<const std::uint8_t>(stream).subspan(first));
  ASSERT_EQ(next.state, ParseState::kComplete);
  EXPECT_EQ(next.request.op, Op::kPing);
}

void expect_malformed(const Bytes& stream, const std::string& fragment) {
  const auto parsed = parse_request(stream);
  EXPECT_EQ(parsed.state, ParseState::kMalformed);
  EXPECT_NE(parsed.problem.find(fragment), std::string::npos) << parsed.problem;
}

TEST(StoreProtocol, MalformedFramesAreNamed) {
  expect_malformed({0, 0, 0, 0}, "frame length 0");
  expect_malformed({0xFF, 0xFF, 0xFF, 0xFF}, "frame length 4294967295");
  expect_malformed({1, 0, 0, 0, 0}, "unknown opcode 0");
  expect_malformed({1, 0, 0, 0, 10}, "unknown opcode 10");
  expect_malformed({5, 0, 0, 0, 1, 50, 0, 0, 0}, "overrun");  // key longer than the frame
  expect_malformed({2, 0, 0, 0, 9, 0}, "trailing bytes");     // PING with an extra byte
  expect_malformed({5, 0, 0, 0, 5, 0xFF, 0xFF, 0xFF, 0x7F}, "too many keys");
}

}  // namespace
