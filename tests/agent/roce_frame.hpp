// SPDX-License-Identifier: BSD-3-Clause
// A minimal RoCEv2-over-IPv4 Ethernet frame, written field by field (RFC 791, RFC 768, IBTA
// BTH), for the agent's end-to-end checks against the real data plane.
#pragma once

#include <cstdint>
#include <vector>

namespace srv6gw::agent::test {

inline std::vector<uint8_t> roce_v4_frame(const uint8_t dst_ip[4], uint32_t dest_qp) {
  std::vector<uint8_t> f;
  auto put8 = [&](uint32_t v) { f.push_back(uint8_t(v)); };
  auto put16 = [&](uint32_t v) {
    put8(v >> 8);
    put8(v);
  };
  const uint8_t src_ip[4] = {10, 9, 9, 9};
  for (int i = 0; i < 6; ++i) put8(0x02);  // dst MAC
  for (int i = 0; i < 6; ++i) put8(0x04);  // src MAC
  put16(0x0800);
  const size_t payload = 64;
  const size_t udp_len = 8 + 12 + payload + 4;  // UDP + BTH + payload + ICRC
  const size_t ip_start = f.size();
  put8(0x45);
  put8(0);
  put16(uint32_t(20 + udp_len));
  put16(1);       // id
  put16(0x4000);  // DF
  put8(64);       // TTL
  put8(17);       // UDP
  put16(0);       // checksum, below
  for (int i = 0; i < 4; ++i) put8(src_ip[i]);
  for (int i = 0; i < 4; ++i) put8(dst_ip[i]);
  uint32_t sum = 0;
  for (size_t i = ip_start; i < ip_start + 20; i += 2) sum += uint32_t(f[i]) << 8 | f[i + 1];
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  f[ip_start + 10] = uint8_t(~sum >> 8);
  f[ip_start + 11] = uint8_t(~sum);
  put16(49152);  // source port
  put16(4791);   // RoCEv2
  put16(uint32_t(udp_len));
  put16(0);
  put8(0x0a);     // BTH opcode: RC RDMA WRITE only
  put8(0x40);     // SE=0 M=1 pad=0 tver=0
  put16(0xFFFF);  // P_Key
  put8(0);
  put8(dest_qp >> 16);
  put16(dest_qp & 0xFFFF);
  put8(0x80);  // A bit
  put8(0);
  put16(1);  // PSN
  for (size_t i = 0; i < payload; ++i) put8(uint8_t(i));
  for (int i = 0; i < 4; ++i) put8(0);  // ICRC (not checked here)
  return f;
}

}  // namespace srv6gw::agent::test
