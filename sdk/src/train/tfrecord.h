// TFRecord framing, the container of TensorBoard's event files. A record is
//
//   uint64 length | uint32 masked_crc32c(length) | data | uint32 masked_crc32c(data)
//
// with the integers little-endian. The mask (rotate right by 15 bits, add
// 0xa282ead8) keeps a CRC of data that holds CRCs from being trivial.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace dtrain::train::detail {

// CRC-32C (Castagnoli, reflected polynomial 0x82f63b78), as iSCSI and ext4
// use: crc32c("123456789") == 0xe3069283.
std::uint32_t crc32c(std::string_view bytes);

// TFRecord's masked CRC-32C of `bytes`.
std::uint32_t masked_crc32c(std::string_view bytes);

// `data` framed as one record: 16 bytes more than data.
std::string tfrecord(std::string_view data);

}  // namespace dtrain::train::detail
