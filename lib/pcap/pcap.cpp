// SPDX-License-Identifier: BSD-3-Clause
// Classic pcap (not pcapng): a 24-byte global header followed by 16-byte record headers and
// the captured bytes. The magic number tells both the byte order of every header field and
// whether the sub-second timestamp field holds microseconds or nanoseconds.
#include "pcap/pcap.hpp"

#include <cerrno>
#include <cstring>
#include <utility>

namespace srv6gw::pcap {
namespace {

constexpr uint32_t kMagicMicro = 0xa1b2c3d4;
constexpr uint32_t kMagicNano = 0xa1b23c4d;
constexpr uint32_t kLinkTypeEthernet = 1;
constexpr size_t kGlobalHeaderLen = 24;
constexpr size_t kRecordHeaderLen = 16;
// Upper bound on one record, so that a corrupt length field cannot make us allocate
// gigabytes: the largest snaplen any tool writes is 262144.
constexpr uint32_t kMaxRecordLen = 256 * 1024;

uint32_t load_le32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

uint32_t byte_swap32(uint32_t v) {
  return (v >> 24) | ((v >> 8) & 0xff00) | ((v << 8) & 0xff0000) | (v << 24);
}

void store_le16(uint8_t* p, uint16_t v) {
  p[0] = uint8_t(v);
  p[1] = uint8_t(v >> 8);
}

void store_le32(uint8_t* p, uint32_t v) {
  p[0] = uint8_t(v);
  p[1] = uint8_t(v >> 8);
  p[2] = uint8_t(v >> 16);
  p[3] = uint8_t(v >> 24);
}

std::string errno_text(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Reader

Reader::Reader(Reader&& other) noexcept
    : file_(std::exchange(other.file_, nullptr)),
      swapped_(other.swapped_),
      nanosecond_(other.nanosecond_),
      link_type_(other.link_type_),
      error_(std::move(other.error_)) {}

Reader& Reader::operator=(Reader&& other) noexcept {
  if (this != &other) {
    if (file_ != nullptr) std::fclose(file_);
    file_ = std::exchange(other.file_, nullptr);
    swapped_ = other.swapped_;
    nanosecond_ = other.nanosecond_;
    link_type_ = other.link_type_;
    error_ = std::move(other.error_);
  }
  return *this;
}

Reader::~Reader() {
  if (file_ != nullptr) std::fclose(file_);
}

std::optional<Reader> Reader::open(const std::string& path, std::string& error) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    error = errno_text("cannot open", path);
    return std::nullopt;
  }
  uint8_t header[kGlobalHeaderLen];
  const size_t got = std::fread(header, 1, sizeof header, f);
  if (got != sizeof header) {
    std::fclose(f);
    error = path + ": not a pcap file (" + std::to_string(got) +
            " bytes, shorter than the 24-byte pcap header)";
    return std::nullopt;
  }
  const uint32_t magic_le = load_le32(header);
  const uint32_t magic_swapped = byte_swap32(magic_le);
  Reader r;
  if (magic_le == kMagicMicro || magic_le == kMagicNano) {
    r.swapped_ = false;
    r.nanosecond_ = magic_le == kMagicNano;
  } else if (magic_swapped == kMagicMicro || magic_swapped == kMagicNano) {
    r.swapped_ = true;
    r.nanosecond_ = magic_swapped == kMagicNano;
  } else {
    std::fclose(f);
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%08x", magic_le);
    error = path + ": not a classic pcap file (magic " + hex +
            "; pcapng is not supported, convert with editcap -F pcap)";
    return std::nullopt;
  }
  const uint32_t raw_link = load_le32(header + 20);
  // The top bits of the link-type field carry FCS information (pcap-linktype(7)); the link
  // type itself is the low 16 bits.
  r.link_type_ = (r.swapped_ ? byte_swap32(raw_link) : raw_link) & 0xffff;
  r.file_ = f;
  return r;
}

std::optional<Packet> Reader::next() {
  if (file_ == nullptr) return std::nullopt;
  uint8_t header[kRecordHeaderLen];
  const size_t got = std::fread(header, 1, sizeof header, file_);
  if (got == 0) {
    if (std::ferror(file_)) error_ = std::string("read error: ") + std::strerror(errno);
    std::fclose(file_);
    file_ = nullptr;
    return std::nullopt;
  }
  auto field = [&](size_t off) {
    const uint32_t v = load_le32(header + off);
    return swapped_ ? byte_swap32(v) : v;
  };
  auto fail = [&](std::string why) -> std::optional<Packet> {
    error_ = std::move(why);
    std::fclose(file_);
    file_ = nullptr;
    return std::nullopt;
  };
  if (got != sizeof header) {
    return fail("truncated record header (" + std::to_string(got) + " of 16 bytes)");
  }
  const uint32_t seconds = field(0);
  const uint32_t fraction = field(4);
  const uint32_t incl_len = field(8);
  const uint32_t orig_len = field(12);
  if (incl_len > kMaxRecordLen) {
    return fail("record length " + std::to_string(incl_len) + " exceeds the " +
                std::to_string(kMaxRecordLen) + "-byte limit (corrupt file?)");
  }
  Packet p;
  p.timestamp_ns = uint64_t(seconds) * 1000000000ull +
                   (nanosecond_ ? uint64_t(fraction) : uint64_t(fraction) * 1000ull);
  p.original_len = orig_len < incl_len ? incl_len : orig_len;
  p.data.resize(incl_len);
  const size_t body = incl_len == 0 ? 0 : std::fread(p.data.data(), 1, incl_len, file_);
  if (body != incl_len) {
    return fail("truncated record: " + std::to_string(body) + " of " + std::to_string(incl_len) +
                " captured bytes present");
  }
  return p;
}

// ---------------------------------------------------------------------------------------------
// Writer

Writer::Writer(Writer&& other) noexcept
    : file_(std::exchange(other.file_, nullptr)), snaplen_(other.snaplen_) {}

Writer& Writer::operator=(Writer&& other) noexcept {
  if (this != &other) {
    if (file_ != nullptr) std::fclose(file_);
    file_ = std::exchange(other.file_, nullptr);
    snaplen_ = other.snaplen_;
  }
  return *this;
}

Writer::~Writer() {
  if (file_ != nullptr) std::fclose(file_);
}

std::optional<Writer> Writer::create(const std::string& path, std::string& error,
                                     uint32_t snaplen) {
  if (snaplen == 0) {
    error = "snaplen must be positive";
    return std::nullopt;
  }
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    error = errno_text("cannot create", path);
    return std::nullopt;
  }
  uint8_t header[kGlobalHeaderLen] = {};
  store_le32(header, kMagicMicro);
  store_le16(header + 4, 2);  // version 2.4
  store_le16(header + 6, 4);
  // thiszone (8) and sigfigs (12) stay zero.
  store_le32(header + 16, snaplen);
  store_le32(header + 20, kLinkTypeEthernet);
  if (std::fwrite(header, 1, sizeof header, f) != sizeof header) {
    error = errno_text("cannot write", path);
    std::fclose(f);
    return std::nullopt;
  }
  Writer w;
  w.file_ = f;
  w.snaplen_ = snaplen;
  return w;
}

bool Writer::write(const uint8_t* data, size_t len, uint64_t timestamp_ns) {
  if (file_ == nullptr) return false;
  if (len > UINT32_MAX) return false;
  const uint32_t captured = len > snaplen_ ? snaplen_ : uint32_t(len);
  uint8_t header[kRecordHeaderLen];
  store_le32(header, uint32_t(timestamp_ns / 1000000000ull));
  store_le32(header + 4, uint32_t(timestamp_ns % 1000000000ull / 1000ull));
  store_le32(header + 8, captured);
  store_le32(header + 12, uint32_t(len));
  if (std::fwrite(header, 1, sizeof header, file_) != sizeof header) return false;
  return captured == 0 || std::fwrite(data, 1, captured, file_) == captured;
}

bool Writer::close() {
  if (file_ == nullptr) return false;
  const bool flushed = std::fflush(file_) == 0 && !std::ferror(file_);
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  return flushed && closed;
}

// ---------------------------------------------------------------------------------------------
// Whole files

std::optional<std::vector<Packet>> read_all(const std::string& path, std::string& error) {
  auto reader = Reader::open(path, error);
  if (!reader) return std::nullopt;
  if (reader->link_type() != kLinkTypeEthernet) {
    error = path + ": link type " + std::to_string(reader->link_type()) + " is not Ethernet (1)";
    return std::nullopt;
  }
  std::vector<Packet> packets;
  while (auto p = reader->next()) packets.push_back(std::move(*p));
  if (!reader->error().empty()) {
    error = path + ": packet " + std::to_string(packets.size() + 1) + ": " + reader->error();
    return std::nullopt;
  }
  return packets;
}

bool write_all(const std::string& path, const std::vector<Packet>& packets, std::string& error) {
  auto writer = Writer::create(path, error);
  if (!writer) return false;
  for (size_t i = 0; i < packets.size(); ++i) {
    if (!writer->write(packets[i])) {
      error = errno_text("cannot write packet " + std::to_string(i + 1) + " to", path);
      return false;
    }
  }
  if (!writer->close()) {
    error = errno_text("cannot flush", path);
    return false;
  }
  return true;
}

}  // namespace srv6gw::pcap
