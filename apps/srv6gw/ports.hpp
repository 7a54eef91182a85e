// SPDX-License-Identifier: BSD-3-Clause
// Port and mempool setup for the gateway's two ports (control layer, main lcore only).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "net/addr.hpp"

struct rte_mempool;

namespace srv6gw::app {

// Descriptor ring sizes asked of each queue; the PMD may adjust them.
inline constexpr uint16_t kRxRingSize = 1024;
inline constexpr uint16_t kTxRingSize = 1024;
inline constexpr unsigned kMempoolCache = 256;

// Packet mbufs: the default 128 B headroom (fixed at DPDK build time, RTE_PKTMBUF_HEADROOM)
// plus room for a 4 KB-MTU RoCEv2 frame that already carries the largest encapsulation the
// fabric side receives (Ethernet + outer IPv6 + SRH of 16 SIDs + inner IP/UDP/BTH/RETH +
// 4096 B payload + ICRC): 4736 B. Larger frames arrive as chains (scattered RX).
inline constexpr uint16_t kPacketDataRoom = 128 + 4736;
// Header mbufs for encapsulations that do not fit the headroom in place: Ethernet + IPv6 +
// SRH of 16 SIDs is 14 + 40 + 8 + 256 = 318 B; the segment keeps the default headroom and
// has 384 B after data_off.
inline constexpr uint16_t kHeaderDataRoom = 128 + 384;

// Outcome of resolving a port given by name or id.
std::optional<uint16_t> resolve_port(const std::string& name_or_id, std::string& error);

struct PortSetup {
  uint16_t port_id = 0;
  std::string name;  // DPDK device name
  std::string role;  // "host" or "fabric"
  int socket = 0;
  uint16_t rx_desc = kRxRingSize, tx_desc = kTxRingSize;
  bool multiseg_tx = false;  // RTE_ETH_TX_OFFLOAD_MULTI_SEGS enabled
  bool rss = false;
  uint64_t rss_hf = 0;
  uint16_t mtu = 0;
  // Configured IP MTU (config::PortRole::mtu, set before configure_and_start); 0 = the MTU
  // the data room holds in one segment. Above that, RX scatters frames into chains.
  uint16_t ip_mtu = 0;
  bool rx_scatter = false;  // RTE_ETH_RX_OFFLOAD_SCATTER enabled
  net::MacAddr mac;
  bool started = false;
};

// Per-socket packet pools, created with the explicit "ring_mp_mc" ops so that a secondary
// process (dpdk-dumpcap) resolves the same ops as the primary (see docs in ports.cpp).
struct Pools {
  struct OnSocket {
    int socket = 0;
    rte_mempool* packets = nullptr;
    rte_mempool* headers = nullptr;
  };
  std::vector<OnSocket> by_socket;
  rte_mempool* packets_for(int socket) const;
  // mbufs taken out of each pool (packet pools, then header pools, socket by socket):
  // RX descriptor rings, TX rings, packets in flight. Per-lcore caches count as free.
  struct Usage {
    std::string name;
    unsigned size = 0;
    unsigned in_use = 0;
  };
  std::vector<Usage> usage() const;
  rte_mempool* headers_for(int socket) const;
  void free_all();
};

// Reads device capabilities and fills a PortSetup (no configuration yet).
bool probe_port(uint16_t port_id, const std::string& role, PortSetup& out, std::string& error);

// Creates the pools for the sockets of the given ports. `mbufs` is the configured budget of
// free mbufs on top of what descriptor rings and TX buffers can hold.
bool create_pools(const std::vector<PortSetup*>& ports, uint16_t queues, unsigned workers,
                  uint32_t mbufs, Pools& pools, std::string& error);

// Configures `queues` RX/TX queues (RSS over IP + UDP ports where supported), the MTU,
// promiscuous mode, and starts the port.
bool configure_and_start(PortSetup& port, uint16_t queues, rte_mempool* pool, bool want_multiseg,
                         std::string& error);

// Lossless forwarding (docs/design/lossless.md): priority flow control for `pfc_priorities`
// where the PMD can set it, else 802.3x pause in both directions, a warning naming the port
// where it can set neither. Main lcore, after the port started.
void configure_pause(const PortSetup& port, bool lossless,
                     const std::vector<uint8_t>& pfc_priorities);

void stop_and_close(PortSetup& port);

}  // namespace srv6gw::app
