#include "store_protocol.h"

#include <cstring>

namespace dtrain::store::protocol {

namespace {

class Writer {
 public:
  void u8(std::uint8_t v) { bytes_.push_back(v); }
  void u32(std::uint32_t v) { little_endian(v); }
  void i64(std::int64_t v) { little_endian(static_cast<std::uint64_t>(v)); }
  void blob(const void* data, std::size_t size) {
    u32(static_cast<std::uint32_t>(size));
    const auto* p = static_cast<const std::uint8_t*>(data);
    bytes_.insert(bytes_.end(), p, p + size);
  }
  void blob(const Bytes& b) { blob(b.data(), b.size()); }
  void blob(const std::string& s) { blob(s.data(), s.size()); }

  // The body, prefixed with its length.
  Bytes frame() const {
    Writer framed;
    framed.u32(static_cast<std::uint32_t>(bytes_.size()));
    framed.bytes_.insert(framed.bytes_.end(), bytes_.begin(), bytes_.end());
    return framed.bytes_;
  }

 private:
  // An unsigned integer, least significant byte first (the wire's order).
  template <typename T>
  void little_endian(T v) {
    for (std::size_t i = 0; i < sizeof(T); ++i) {
      bytes_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
    }
  }

  Bytes bytes_;
};

// Reads fields from a body; any overrun marks it failed instead of reading past the end.
class Reader {
 public:
  explicit Reader(std::span<const std::uint8_t> body) : body_(body) {}

  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == body_.size(); }

  std::uint8_t u8() {
    if (!take(1)) {
      return 0;
    }
    return body_[pos_ - 1];
  }
  std::uint32_t u32() { return little_endian<std::uint32_t>(); }
  std::int64_t i64() { return static_cast<std::int64_t>(little_endian<std::uint64_t>()); }
  Bytes blob() {
    const std::uint32_t size = u32();
    if (!ok_ || !take(size)) {
      return {};
    }
    return Bytes(body_.begin() + static_cast<std::ptrdiff_t>(pos_ - size),
                 body_.begin() + static_cast<std::ptrdiff_t>(pos_));
  }
  std::string text() {
    const Bytes b = blob();
    return std::string(b.begin(), b.end());
  }

 private:
  // An unsigned integer, least significant byte first; 0 past the end.
  template <typename T>
  T little_endian() {
    if (!take(sizeof(T))) {
      return 0;
    }
    T v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) {
      v |= T{body_[pos_ - sizeof(T) + i]} << (8 * i);
    }
    return v;
  }

  bool take(std::size_t n) {
    if (!ok_ || body_.size() - pos_ < n) {
      ok_ = false;
      return false;
    }
    pos_ += n;
    return true;
  }

  std::span<const std::uint8_t> body_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

bool has_single_key(Op op) {
  return op == Op::kSet || op == Op::kGet || op == Op::kAdd || op == Op::kCompareSet ||
         op == Op::kDelete;
}

}  // namespace

Bytes encode_request(const Request& request) {
  Writer w;
  w.u8(static_cast<std::uint8_t>(request.op));
  if (has_single_key(request.op)) {
    w.blob(request.keys.at(0));
  }
  switch (request.op) {
    case Op::kSet:
      w.blob(request.value);
      break;
    case Op::kGet:
    case Op::kAdd:
      w.i64(request.number);
      break;
    case Op::kCompareSet:
      w.blob(request.expected);
      w.blob(request.value);
      break;
    case Op::kCheck:
    case Op::kWait:
      w.u32(static_cast<std::uint32_t>(request.keys.size()));
      for (const auto& key : request.keys) {
        w.blob(key);
      }
      if (request.op == Op::kWait) {
        w.i64(request.number);
      }
      break;
    case Op::kDelete:
    case Op::kNumKeys:
    case Op::kPing:
      break;
  }
  return w.frame();
}

Bytes encode_response(const Response& response) {
  Writer w;
  w.u8(static_cast<std::uint8_t>(response.status));
  w.blob(response.value);
  w.i64(response.number);
  return w.frame();
}

ParsedRequest parse_request(std::span<const std::uint8_t> stream) {
  ParsedRequest parsed;
  if (stream.size() < 4) {
    return parsed;  // kNeedMore
  }
  std::uint32_t length = 0;
  for (int i = 0; i < 4; ++i) {
    length |= std::uint32_t{stream[i]} << (8 * i);
  }
  auto malformed = [&](std::string why) {
    parsed.state = ParseState::kMalformed;
    parsed.problem = std::move(why);
    return parsed;
  };
  if (length == 0 || length > kMaxFrameBytes) {
    return malformed("frame length " + std::to_string(length) + " is outside 1.." +
                     std::to_string(kMaxFrameBytes));
  }
  if (stream.size() - 4 < length) {
    return parsed;  // kNeedMore
  }
  Reader r(stream.subspan(4, length));
  Request& request = parsed.request;
  const std::uint8_t op = r.u8();
  if (op < static_cast<std::uint8_t>(Op::kSet) || op > static_cast<std::uint8_t>(Op::kPing)) {
    return malformed("unknown opcode " + std::to_string(op));
  }
  request.op = static_cast<Op>(op);
  if (has_single_key(request.op)) {
    request.keys.push_back(r.text());
  }
  switch (request.op) {
    case Op::kSet:
      request.value = r.blob();
      break;
    case Op::kGet:
    case Op::kAdd:
      request.number = r.i64();
      break;
    case Op::kCompareSet:
      request.expected = r.blob();
      request.value = r.blob();
      break;
    case Op::kCheck:
    case Op::kWait: {
      const std::uint32_t count = r.u32();
      if (count > kMaxKeysPerRequest) {
        return malformed("too many keys: " + std::to_string(count));
      }
      for (std::uint32_t i = 0; i < count && r.ok(); ++i) {
        request.keys.push_back(r.text());
      }
      if (request.op == Op::kWait) {
        request.number = r.i64();
      }
      break;
    }
    case Op::kDelete:
    case Op::kNumKeys:
    case Op::kPing:
      break;
  }
  if (!r.ok()) {
    return malformed("fields overrun the frame");
  }
  if (!r.at_end()) {
    return malformed("trailing bytes after the fields");
  }
  parsed.state = ParseState::kComplete;
  parsed.consumed = 4 + length;
  return parsed;
}

std::optional<Response> parse_response_body(std::span<const std::uint8_t> body) {
  Reader r(body);
  Response response;
  const std::uint8_t status = r.u8();
  response.value = r.blob();
  response.number = r.i64();
  if (!r.ok() || !r.at_end() || status > static_cast<std::uint8_t>(Status::kTimeout)) {
    return std::nullopt;
  }
  response.status = static_cast<Status>(status);
  return response;
}

}  // namespace dtrain::store::protocol
