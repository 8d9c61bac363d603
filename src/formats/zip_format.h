// Record layouts of the zip format shared by the reader (zip_reader.cpp) and the writer
// (zip_writer.cpp): signatures, fixed sizes and extra-field ids from PKWARE's APPNOTE 6.3
// (sections 4.3.7 local header, 4.3.12 central directory, 4.3.14-16 end records, 4.5.3 zip64).
// Private to src/model; constants only.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ltfit::zip {

inline constexpr std::uint32_t kLocalSignature = 0x04034b50;
inline constexpr std::uint32_t kCentralSignature = 0x02014b50;
inline constexpr std::uint32_t kEndSignature = 0x06054b50;
inline constexpr std::uint32_t kZip64EndSignature = 0x06064b50;
inline constexpr std::uint32_t kZip64LocatorSignature = 0x07064b50;
inline constexpr std::size_t kLocalHeaderSize = 30;
inline constexpr std::size_t kCentralHeaderSize = 46;
inline constexpr std::size_t kEndSize = 22;
inline constexpr std::size_t kZip64EndSize = 56;
inline constexpr std::size_t kZip64LocatorSize = 20;
inline constexpr std::uint16_t kZip64ExtraId = 0x0001;
inline constexpr std::uint16_t kPaddingExtraId = 0x4246;  // "FB", PyTorch's alignment padding
// A 32-bit (16-bit) field holding this says "the value is in the zip64 record".
inline constexpr std::uint32_t k32 = 0xffffffffu;
inline constexpr std::uint16_t k16 = 0xffffu;

}  // namespace ltfit::zip
