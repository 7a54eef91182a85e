// SPDX-License-Identifier: BSD-3-Clause
// Capture files for the offline tool, the traffic generator, benchmarks and tests, through
// libpcap: reads classic pcap (microsecond or nanosecond, either byte order) and pcapng (as
// dumpcap, tshark and dpdk-dumpcap write it); writes classic microsecond pcap files that
// tshark, scapy and DPDK net_pcap read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

struct pcap;
struct pcap_dumper;

namespace srv6gw::pcap {

struct Packet {
  uint64_t timestamp_ns = 0;
  std::vector<uint8_t> data;  // captured bytes (we always capture whole frames)
  uint32_t original_len = 0;  // length on the wire (>= data.size())
};

class Reader {
 public:
  // Opens `path`; on failure returns nullopt and sets `error` to a readable reason.
  static std::optional<Reader> open(const std::string& path, std::string& error);
  Reader(Reader&&) noexcept;
  Reader& operator=(Reader&&) noexcept;
  ~Reader();
  // Next packet; nullopt at end of file. A truncated or corrupt record sets error() and ends
  // reading.
  std::optional<Packet> next();
  const std::string& error() const { return error_; }
  // libpcap's DLT_ value (1 = Ethernet); of the first interface in a pcapng file.
  uint32_t link_type() const { return link_type_; }
  static constexpr uint32_t kEthernet = 1;

 private:
  Reader() = default;
  ::pcap* handle_ = nullptr;
  uint32_t link_type_ = 0;
  std::string error_;
};

class Writer {
 public:
  static std::optional<Writer> create(const std::string& path, std::string& error,
                                      uint32_t snaplen = 65535);
  Writer(Writer&&) noexcept;
  Writer& operator=(Writer&&) noexcept;
  ~Writer();  // flushes and closes
  bool write(const uint8_t* data, size_t len, uint64_t timestamp_ns);
  bool write(const Packet& p) { return write(p.data.data(), p.data.size(), p.timestamp_ns); }
  // Flushes and closes now, reporting whether every buffered byte reached the file (the
  // destructor cannot report that). Further writes fail.
  bool close();

 private:
  Writer() = default;
  void release();
  ::pcap* dead_ = nullptr;  // libpcap's handle for a file without a capture device
  ::pcap_dumper* dumper_ = nullptr;
  uint32_t snaplen_ = 65535;
};

// "RAW (DLT 12)": a link type as libpcap names it, for errors.
std::string link_type_name(uint32_t link_type);

// Convenience: whole files.
std::optional<std::vector<Packet>> read_all(const std::string& path, std::string& error);
bool write_all(const std::string& path, const std::vector<Packet>& packets, std::string& error);

}  // namespace srv6gw::pcap
