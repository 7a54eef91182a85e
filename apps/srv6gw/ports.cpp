// SPDX-License-Identifier: BSD-3-Clause
// Headroom choice. H.Encaps adds 48 + 16·n bytes in front of the inner IP packet; the default
// 128 B mbuf headroom (RTE_PKTMBUF_HEADROOM, a DPDK build-time constant) holds up to 5 SIDs in
// place. A private larger headroom does not survive RX: PMDs reset data_off to
// RTE_PKTMBUF_HEADROOM when they refill descriptors. So longer segment lists (up to 16 SIDs,
// 318 B of headers) are written into a separate small "header" mbuf chained in front of the
// packet, which needs RTE_ETH_TX_OFFLOAD_MULTI_SEGS on the fabric port: we enable it where the
// device offers it and tell the pipeline (PortEnv::fabric_multiseg_tx). Without it such
// packets are dropped and counted as no_headroom by the pipeline, never memmoved.
//
// Mempool ops and dpdk-dumpcap. A pool stores the index of its ops in the process-local ops
// table, and pdump copies captured packets, in the primary, into a pool the secondary
// (dumpcap) created: both processes must resolve an index to the same ops. The tables are
// filled by constructors in load order: the packaged dpdk-testpmd links librte_mempool_dpaa
// directly (registered first) and so disagrees with dpdk-dumpcap, which captures nothing
// (DPDK bug 1073). srv6gw links no mempool driver (only librte_mempool, with --as-needed), so
// its table comes from the same plugin directory in the same order as dumpcap's. We also name
// "ring_mp_mc" explicitly so that neither --mbuf-pool-ops-name nor a build default changes
// what our pools use. tests/integration/test_dumpcap.py proves captures work.
#include "ports.hpp"

#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "dataplane/datapath/burst.hpp"

namespace srv6gw::app {

namespace {

std::string errstr(int rc) {
  return std::string(rte_strerror(rc < 0 ? -rc : rc));
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

int normalize_socket(int socket) {
  if (socket < 0) {
    // Virtual devices have no NUMA node: use the main lcore's.
    socket = int(rte_socket_id());
    if (socket < 0 || unsigned(socket) == unsigned(SOCKET_ID_ANY)) socket = 0;
  }
  return socket;
}

}  // namespace

std::optional<uint16_t> resolve_port(const std::string& name_or_id, std::string& error) {
  uint16_t id = 0;
  if (rte_eth_dev_get_port_by_name(name_or_id.c_str(), &id) == 0) return id;
  if (all_digits(name_or_id) && name_or_id.size() <= 5) {
    unsigned long v = std::stoul(name_or_id);
    if (v < RTE_MAX_ETHPORTS && rte_eth_dev_is_valid_port(uint16_t(v))) return uint16_t(v);
    error = "no port with id " + name_or_id;
  } else {
    error = "no port named '" + name_or_id + "'";
  }
  std::string known;
  uint16_t pid;
  RTE_ETH_FOREACH_DEV(pid) {
    char name[RTE_ETH_NAME_MAX_LEN];
    if (rte_eth_dev_get_name_by_port(pid, name) == 0)
      known += (known.empty() ? "" : ", ") + std::to_string(pid) + "=" + name;
  }
  error += known.empty() ? " (DPDK found no ports: add --vdev or bind a NIC)"
                         : " (ports: " + known + ")";
  return std::nullopt;
}

bool probe_port(uint16_t port_id, const std::string& role, PortSetup& out, std::string& error) {
  out.port_id = port_id;
  out.role = role;
  char name[RTE_ETH_NAME_MAX_LEN] = {};
  rte_eth_dev_get_name_by_port(port_id, name);
  out.name = name;
  out.socket = normalize_socket(rte_eth_dev_socket_id(port_id));
  rte_ether_addr mac{};
  if (int rc = rte_eth_macaddr_get(port_id, &mac); rc != 0) {
    error = role + " port " + out.name + ": cannot read MAC: " + errstr(rc);
    return false;
  }
  std::memcpy(out.mac.bytes.data(), mac.addr_bytes, 6);
  return true;
}

rte_mempool* Pools::packets_for(int socket) const {
  for (const auto& p : by_socket)
    if (p.socket == socket) return p.packets;
  return by_socket.empty() ? nullptr : by_socket.front().packets;
}

rte_mempool* Pools::headers_for(int socket) const {
  for (const auto& p : by_socket)
    if (p.socket == socket) return p.headers;
  return by_socket.empty() ? nullptr : by_socket.front().headers;
}

std::vector<Pools::Usage> Pools::usage() const {
  std::vector<Usage> out;
  for (const bool headers : {false, true}) {
    for (const auto& p : by_socket) {
      const rte_mempool* mp = headers ? p.headers : p.packets;
      if (mp == nullptr) continue;
      out.push_back(Usage{mp->name, mp->size, rte_mempool_in_use_count(mp)});
    }
  }
  return out;
}

void Pools::free_all() {
  for (auto& p : by_socket) {
    rte_mempool_free(p.packets);
    rte_mempool_free(p.headers);
    p.packets = p.headers = nullptr;
  }
  by_socket.clear();
}

bool create_pools(const std::vector<PortSetup*>& ports, uint16_t queues, unsigned workers,
                  uint32_t mbufs, Pools& pools, std::string& error) {
  std::vector<int> sockets;
  for (const PortSetup* p : ports)
    if (std::find(sockets.begin(), sockets.end(), p->socket) == sockets.end())
      sockets.push_back(p->socket);
  const unsigned burst = dataplane::kBurstSize;
  for (int socket : sockets) {
    unsigned ports_here = 0;
    for (const PortSetup* p : ports) ports_here += p->socket == socket;
    // What can sit outside the pool at once: every RX ring full, every TX ring full, the
    // worker's burst and TX buffers, and the per-lcore caches; plus the configured budget.
    unsigned n = ports_here * queues * (kRxRingSize + kTxRingSize + 3 * burst) +
                 (workers + 1) * kMempoolCache + mbufs;
    Pools::OnSocket s;
    s.socket = socket;
    std::string name = "srv6gw_pkt_s" + std::to_string(socket);
    s.packets = rte_pktmbuf_pool_create_by_ops(name.c_str(), n, kMempoolCache, 0, kPacketDataRoom,
                                               socket, "ring_mp_mc");
    if (!s.packets) {
      error = "cannot create packet mempool of " + std::to_string(n) + " mbufs (" +
              std::to_string(kPacketDataRoom) + " B data room) on socket " +
              std::to_string(socket) + ": " + errstr(rte_errno) +
              " (more memory: EAL -m, or a smaller 'mbufs' in the config)";
      return false;
    }
    // Header segments travel with their packet into TX rings of the fabric port.
    unsigned h = ports_here * queues * (kTxRingSize + 3 * burst) + (workers + 1) * kMempoolCache;
    std::string hname = "srv6gw_hdr_s" + std::to_string(socket);
    s.headers = rte_pktmbuf_pool_create_by_ops(hname.c_str(), h, kMempoolCache, 0, kHeaderDataRoom,
                                               socket, "ring_mp_mc");
    if (!s.headers) {
      error = "cannot create header mempool of " + std::to_string(h) + " mbufs on socket " +
              std::to_string(socket) + ": " + errstr(rte_errno);
      rte_mempool_free(s.packets);
      return false;
    }
    spdlog::info("mempool {}: {} mbufs x {} B data room, {}: {} mbufs x {} B (socket {}, ops {})",
                 name, n, kPacketDataRoom, hname, h, kHeaderDataRoom, socket, "ring_mp_mc");
    pools.by_socket.push_back(s);
  }
  return true;
}

bool configure_and_start(PortSetup& port, uint16_t queues, rte_mempool* pool, bool want_multiseg,
                         std::string& error) {
  const uint16_t pid = port.port_id;
  const std::string who = port.role + " port " + port.name;
  rte_eth_dev_info info{};
  if (int rc = rte_eth_dev_info_get(pid, &info); rc != 0) {
    error = who + ": cannot get device info: " + errstr(rc);
    return false;
  }
  if (queues > info.max_rx_queues || queues > info.max_tx_queues) {
    error = who + ": " + std::to_string(queues) + " queues asked, the device offers " +
            std::to_string(info.max_rx_queues) + " RX / " + std::to_string(info.max_tx_queues) +
            " TX";
    return false;
  }

  rte_eth_conf conf{};
  if (queues > 1) {
    // RoCEv2 RNICs vary the UDP source port per QP: hash on L4 ports to spread QPs.
    uint64_t want = RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP;
    port.rss_hf = want & info.flow_type_rss_offloads;
    if (port.rss_hf != 0) {
      conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
      conf.rx_adv_conf.rss_conf.rss_key = nullptr;  // the driver's default key
      conf.rx_adv_conf.rss_conf.rss_hf = port.rss_hf;
      port.rss = true;
      if (port.rss_hf != want)
        spdlog::warn("{}: RSS limited to hash types {:#x} of the {:#x} asked", who, port.rss_hf,
                     want);
    } else {
      spdlog::warn("{}: no RSS support; {} queues receive only what the device puts there", who,
                   queues);
    }
  }

  // Frames up to the data room minus Ethernet header, two VLAN tags and FCS.
  const uint32_t segment_mtu = uint32_t(kPacketDataRoom) - RTE_PKTMBUF_HEADROOM -
                               RTE_ETHER_HDR_LEN - 2 * RTE_VLAN_HLEN - RTE_ETHER_CRC_LEN;
  uint32_t want_mtu = segment_mtu;
  if (port.ip_mtu != 0) {
    // Configured MTU (jumbo frames): room for two tags as above; what exceeds one segment
    // arrives as a chain, which needs scattered RX where the device has it (net_pcap chains
    // without being asked).
    want_mtu = uint32_t(port.ip_mtu) + 2 * RTE_VLAN_HLEN;
    if (want_mtu > segment_mtu) {
      if (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_SCATTER) {
        conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_SCATTER;
        port.rx_scatter = true;
      } else {
        spdlog::warn(
            "{}: no scattered RX; frames above {} B of IP MTU may be dropped by the device", who,
            segment_mtu);
      }
    }
  }
  // The device's frame limit binds too: some PMDs (net_af_packet: 1518) state max_rx_pktlen
  // and leave max_mtu at UINT16_MAX, and rte_eth_dev_configure refuses MTU + overhead above
  // it. Overhead as ethdev computes it (eth_dev_get_overhead_len).
  const uint32_t overhead = (info.max_mtu != UINT16_MAX && info.max_rx_pktlen > info.max_mtu)
                                ? info.max_rx_pktlen - info.max_mtu
                                : uint32_t(RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN);
  const uint32_t frame_mtu = info.max_rx_pktlen > overhead ? info.max_rx_pktlen - overhead : 0;
  port.mtu = uint16_t(std::min({want_mtu, uint32_t(info.max_mtu), frame_mtu}));
  if (port.mtu >= info.min_mtu) conf.rxmode.mtu = port.mtu;

  if (want_multiseg && (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS)) {
    conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
    port.multiseg_tx = true;
  }

  if (int rc = rte_eth_dev_configure(pid, queues, queues, &conf); rc != 0) {
    error = who + ": configure failed: " + errstr(rc);
    return false;
  }
  port.rx_desc = kRxRingSize;
  port.tx_desc = kTxRingSize;
  if (int rc = rte_eth_dev_adjust_nb_rx_tx_desc(pid, &port.rx_desc, &port.tx_desc); rc != 0) {
    error = who + ": cannot adjust ring sizes: " + errstr(rc);
    return false;
  }
  rte_eth_rxconf rxconf = info.default_rxconf;
  rxconf.offloads = conf.rxmode.offloads;
  rte_eth_txconf txconf = info.default_txconf;
  txconf.offloads = conf.txmode.offloads;
  for (uint16_t q = 0; q < queues; ++q) {
    if (int rc = rte_eth_rx_queue_setup(pid, q, port.rx_desc, unsigned(port.socket), &rxconf, pool);
        rc != 0) {
      error = who + ": RX queue " + std::to_string(q) + " setup failed: " + errstr(rc);
      return false;
    }
    if (int rc = rte_eth_tx_queue_setup(pid, q, port.tx_desc, unsigned(port.socket), &txconf);
        rc != 0) {
      error = who + ": TX queue " + std::to_string(q) + " setup failed: " + errstr(rc);
      return false;
    }
  }
  if (int rc = rte_eth_dev_start(pid); rc != 0) {
    error = who + ": start failed: " + errstr(rc);
    return false;
  }
  port.started = true;
  // A bump in the wire forwards frames addressed to the far end, not to us.
  if (int rc = rte_eth_promiscuous_enable(pid); rc != 0 && rc != -ENOTSUP)
    spdlog::warn("{}: cannot enable promiscuous mode: {}", who, errstr(rc));

  rte_eth_link link{};
  rte_eth_link_get_nowait(pid, &link);
  char link_text[RTE_ETH_LINK_MAX_STR_LEN] = {};
  rte_eth_link_to_str(link_text, sizeof(link_text), &link);
  char mac[RTE_ETHER_ADDR_FMT_SIZE];
  rte_ether_addr ea;
  std::memcpy(ea.addr_bytes, port.mac.bytes.data(), 6);
  rte_ether_format_addr(mac, sizeof(mac), &ea);
  spdlog::info(
      "{} (id {}, socket {}, {}): {} queues x {}/{} descriptors, mtu {}, rss {}, "
      "multi-seg tx {}, rx scatter {}; {}",
      who, pid, port.socket, mac, queues, port.rx_desc, port.tx_desc, port.mtu,
      port.rss ? "on" : "off", port.multiseg_tx ? "on" : "off", port.rx_scatter ? "on" : "off",
      link_text);
  return true;
}

void configure_pause(const PortSetup& port, bool lossless,
                     const std::vector<uint8_t>& pfc_priorities) {
  const std::string who = port.role + " port " + port.name;
  if (!lossless) {
    spdlog::info("{}: lossless off, link flow control left as the device has it", who);
    return;
  }
  // The port sends pause frames when its RX buffer fills (the worker stopped polling it)
  // and honours those of its peer. PFC first, for the configured priorities only (the
  // fabric's RoCE class); the water marks and pause time the driver reports for link flow
  // control are kept, or left to the driver (0). Where the PMD has no PFC, 802.3x link
  // pause; where it has neither (vdevs), a warning: the NIC is then set outside DPDK
  // (docs/design/lossless.md).
  rte_eth_fc_conf fc{};
  const bool have_fc = rte_eth_dev_flow_ctrl_get(port.port_id, &fc) == 0;
  fc.mode = RTE_ETH_FC_FULL;
  std::string done, failed;
  int pfc_rc = 0;
  for (uint8_t prio : pfc_priorities) {
    rte_eth_pfc_conf pfc{};
    pfc.fc = fc;
    pfc.priority = prio;
    pfc_rc = rte_eth_dev_priority_flow_ctrl_set(port.port_id, &pfc);
    std::string& list = pfc_rc == 0 ? done : failed;
    if (!list.empty()) list += ',';
    list += std::to_string(prio);
    if (pfc_rc == -ENOTSUP) break;  // none will work
  }
  if (failed.empty()) {
    spdlog::info("{}: priority flow control on for priorities {}", who, done);
    return;
  }
  if (!done.empty())
    spdlog::warn("{}: PFC on for priorities {}, refused for {} ({})", who, done, failed,
                 errstr(pfc_rc));
  else
    spdlog::warn("{}: the PMD cannot set priority flow control ({}); trying 802.3x link pause", who,
                 errstr(pfc_rc));
  int rc = have_fc ? rte_eth_dev_flow_ctrl_set(port.port_id, &fc) : -ENOTSUP;
  if (rc == 0)
    spdlog::info("{}: 802.3x flow control on (pause frames sent and honoured)", who);
  else
    spdlog::warn(
        "{}: the PMD cannot set link flow control either ({}): pause frames depend on the "
        "device's own settings (PFC/pause are then configured outside DPDK, "
        "docs/design/lossless.md)",
        who, errstr(rc));
}

void stop_and_close(PortSetup& port) {
  if (port.started) {
    if (int rc = rte_eth_dev_stop(port.port_id); rc != 0)
      spdlog::warn("{} port {}: stop failed: {}", port.role, port.name, errstr(rc));
    port.started = false;
  }
  rte_eth_dev_close(port.port_id);
}

}  // namespace srv6gw::app
