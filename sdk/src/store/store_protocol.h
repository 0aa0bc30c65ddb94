// The TCP store's wire format, as pure functions (fuzzed by
// tests/fuzz/store_protocol_fuzz.cpp).
//
// Every message is a frame: u32 body length (little-endian), then the body.
// A request body is an opcode byte followed by fields; a response body is a
// status byte followed by fields. Fields: blob = u32 length + bytes,
// i64 = 8 bytes little-endian, list = u32 count + that many blobs.
//
//   SET key value | GET key timeout_ms | ADD key delta | COMPARE_SET key expected desired
//   CHECK keys    | WAIT keys timeout_ms | DELETE key | NUM_KEYS | PING
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace dtrain::store::protocol {

using Bytes = std::vector<std::uint8_t>;

// Frames larger than this are malformed: the peer is cut off, not obeyed.
constexpr std::uint32_t kMaxFrameBytes = 64u << 20;
constexpr std::size_t kMaxKeysPerRequest = 1u << 16;

enum class Op : std::uint8_t {
  kSet = 1,
  kGet = 2,
  kAdd = 3,
  kCompareSet = 4,
  kCheck = 5,
  kWait = 6,
  kDelete = 7,
  kNumKeys = 8,
  kPing = 9,
};

enum class Status : std::uint8_t { kOk = 0, kError = 1, kTimeout = 2 };

struct Request {
  Op op = Op::kPing;
  std::vector<std::string> keys;  // one for single-key ops
  Bytes value;                    // SET value, COMPARE_SET desired
  Bytes expected;                 // COMPARE_SET expected
  std::int64_t number = 0;        // ADD delta, GET/WAIT timeout in ms
};

struct Response {
  Status status = Status::kOk;
  Bytes value;              // GET, COMPARE_SET value; error text
  std::int64_t number = 0;  // ADD sum, CHECK/DELETE bool, NUM_KEYS count
};

// Result of looking at the front of a byte stream.
enum class ParseState { kComplete, kNeedMore, kMalformed };

struct ParsedRequest {
  ParseState state = ParseState::kNeedMore;
  Request request;
  std::size_t consumed = 0;  // bytes of the stream the frame used
  std::string problem;       // why it is malformed
};

Bytes encode_request(const Request& request);
Bytes encode_response(const Response& response);

// Parses one request frame from the front of `stream`.
ParsedRequest parse_request(std::span<const std::uint8_t> stream);
// Parses a response body (without its length prefix); nullopt when malformed.
std::optional<Response> parse_response_body(std::span<const std::uint8_t> body);

}  // namespace dtrain::store::protocol
