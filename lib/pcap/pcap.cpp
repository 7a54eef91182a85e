// SPDX-License-Identifier: BSD-3-Clause
// libpcap does the file formats; this adds what its users share: nanosecond timestamps,
// owned packets, errors that name the file, and write errors that are reported.
#include "pcap/pcap.hpp"

#include <pcap/pcap.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

namespace srv6gw::pcap {
namespace {

static_assert(Reader::kEthernet == DLT_EN10MB);

std::string errno_text(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Reader

Reader::Reader(Reader&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)),
      link_type_(other.link_type_),
      error_(std::move(other.error_)) {}

Reader& Reader::operator=(Reader&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) pcap_close(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
    link_type_ = other.link_type_;
    error_ = std::move(other.error_);
  }
  return *this;
}

Reader::~Reader() {
  if (handle_ != nullptr) pcap_close(handle_);
}

std::optional<Reader> Reader::open(const std::string& path, std::string& error) {
  // Opened here so that a missing file reads as such, not as a format problem.
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    error = errno_text("cannot open", path);
    return std::nullopt;
  }
  char errbuf[PCAP_ERRBUF_SIZE] = {};
  // Nanosecond precision: microsecond files are scaled up, nanosecond files kept as they are.
  ::pcap* h = pcap_fopen_offline_with_tstamp_precision(f, PCAP_TSTAMP_PRECISION_NANO, errbuf);
  if (h == nullptr) {
    std::fclose(f);
    error = path + ": not a pcap file or a pcapng file (" + errbuf + ")";
    return std::nullopt;
  }
  Reader r;
  r.handle_ = h;
  r.link_type_ = uint32_t(pcap_datalink(h));
  return r;
}

std::optional<Packet> Reader::next() {
  if (handle_ == nullptr) return std::nullopt;
  pcap_pkthdr* header = nullptr;
  const u_char* bytes = nullptr;
  const int got = pcap_next_ex(handle_, &header, &bytes);
  if (got != 1) {
    // -2: end of file; -1: a truncated or corrupt record (libpcap says which).
    if (got == -1) error_ = pcap_geterr(handle_);
    pcap_close(handle_);
    handle_ = nullptr;
    return std::nullopt;
  }
  Packet p;
  p.timestamp_ns = uint64_t(header->ts.tv_sec) * 1000000000ull + uint64_t(header->ts.tv_usec);
  p.original_len = header->len < header->caplen ? header->caplen : header->len;
  p.data.assign(bytes, bytes + header->caplen);
  return p;
}

// ---------------------------------------------------------------------------------------------
// Writer

Writer::Writer(Writer&& other) noexcept
    : dead_(std::exchange(other.dead_, nullptr)),
      dumper_(std::exchange(other.dumper_, nullptr)),
      snaplen_(other.snaplen_) {}

Writer& Writer::operator=(Writer&& other) noexcept {
  if (this != &other) {
    release();
    dead_ = std::exchange(other.dead_, nullptr);
    dumper_ = std::exchange(other.dumper_, nullptr);
    snaplen_ = other.snaplen_;
  }
  return *this;
}

Writer::~Writer() {
  release();
}

void Writer::release() {
  if (dumper_ != nullptr) pcap_dump_close(dumper_);  // flushes and closes the file
  if (dead_ != nullptr) pcap_close(dead_);
  dumper_ = nullptr;
  dead_ = nullptr;
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
  Writer w;
  w.snaplen_ = snaplen;
  w.dead_ =
      pcap_open_dead_with_tstamp_precision(DLT_EN10MB, int(snaplen), PCAP_TSTAMP_PRECISION_MICRO);
  if (w.dead_ != nullptr) w.dumper_ = pcap_dump_fopen(w.dead_, f);
  if (w.dumper_ == nullptr) {
    error = "cannot write " + path + ": " + (w.dead_ ? pcap_geterr(w.dead_) : "out of memory");
    std::fclose(f);
    return std::nullopt;
  }
  if (std::ferror(f)) {
    error = errno_text("cannot write", path);
    return std::nullopt;
  }
  return w;
}

bool Writer::write(const uint8_t* data, size_t len, uint64_t timestamp_ns) {
  if (dumper_ == nullptr) return false;
  if (len > UINT32_MAX) return false;
  pcap_pkthdr header{};
  header.ts.tv_sec = time_t(timestamp_ns / 1000000000ull);
  header.ts.tv_usec = suseconds_t(timestamp_ns % 1000000000ull / 1000ull);
  header.caplen = len > snaplen_ ? snaplen_ : uint32_t(len);
  header.len = uint32_t(len);
  pcap_dump(reinterpret_cast<u_char*>(dumper_), &header, data);
  return !std::ferror(pcap_dump_file(dumper_));
}

bool Writer::close() {
  if (dumper_ == nullptr) return false;
  // Every buffered byte reaches the file here; pcap_dump_close() then has nothing to report.
  const bool flushed = pcap_dump_flush(dumper_) == 0 && !std::ferror(pcap_dump_file(dumper_));
  release();
  return flushed;
}

std::string link_type_name(uint32_t link_type) {
  const char* name = pcap_datalink_val_to_name(int(link_type));
  return std::string(name ? name : "unknown") + " (DLT " + std::to_string(link_type) + ")";
}

// ---------------------------------------------------------------------------------------------
// Whole files

std::optional<std::vector<Packet>> read_all(const std::string& path, std::string& error) {
  auto reader = Reader::open(path, error);
  if (!reader) return std::nullopt;
  if (reader->link_type() != Reader::kEthernet) {
    error = path + ": link type " + link_type_name(reader->link_type()) + " is not Ethernet";
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
