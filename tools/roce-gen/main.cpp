// SPDX-License-Identifier: BSD-3-Clause
// roce-gen: writes a deterministic RoCEv2 workload (N hosts x M QPs, opcode mix, sizes,
// IPv4/IPv6, optional VLAN and interleaved non-RoCE frames) into a pcap file, and optionally
// a CSV manifest of what every frame is meant to be (tests check it against dissectors).
// With EAL arguments before "--" it transmits the same workload on a DPDK port instead,
// pktgen-style, at a target rate (dpdk_tx.hpp).
#include <getopt.h>
#include <rte_eal.h>
#include <rte_errno.h>

#include <cmath>
#include <csignal>

#include <array>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "net/addr.hpp"
#include "pcap/pcap.hpp"
#include "roce-gen/dpdk_tx.hpp"
#include "roce-gen/roce_gen.hpp"

namespace {

using namespace srv6gw;

constexpr const char* kUsage = R"(usage: roce-gen -o FILE [options]
       roce-gen EAL-ARGS -- --tx-port PORT [--rate-pps N | --rate-mbps M]
                [--duration S] [options]

Writes RoCEv2 frames (Ethernet, no FCS) into a classic pcap file. Same options and seed
give a byte-identical file. With EAL arguments before '--', sends the same frames on a
DPDK port instead (e.g. -l 0 --no-huge -m 256 --no-pci --vdev net_af_packet0,iface=veth0).

Transmit mode (EAL arguments given):
      --tx-port PORT       DPDK port name (net_af_packet0) or id (required)
      --rate-pps N         target rate in frames per second
      --rate-mbps M        target rate in Mbit/s of Ethernet frames (no FCS/preamble/gap)
                           (neither: as fast as the port takes them)
      --duration S         seconds to send (fractions allowed); with --count as well,
                           whichever ends first; without --count the workload is endless
      --burst N            frames per TX burst (default 32)
      --mbufs N            mbuf pool size (default 4095)
      --report-json FILE   write the transmit report as JSON

  -o, --output FILE        pcap file to write (required)
      --manifest FILE      also write a CSV line per frame: what it is meant to be
  -n, --count N            frames in total, RoCE and non-RoCE (default 1000)
      --seed N             random seed (default 1)
      --hosts N            local hosts, i.e. source addresses (default 1)
      --qps N              queue pairs per host (default 1)
      --remote-hosts N     destination addresses (default = hosts); QP q of host h
                           talks to remote (h + q) mod N
      --family F           ipv4 | ipv6 | mixed (QPs alternate) (default ipv4)
      --opcodes LIST       NAME[:WEIGHT],... or a mix: default, all, writes, sends,
                           reads, control. Names: send-first, send-middle, send-last,
                           send-only, write-first, write-middle, write-last, write-only,
                           read-request, read-response-first, read-response-middle,
                           read-response-last, read-response-only, ack, cnp
      --size N             frame length in bytes without FCS (default 1024)
      --sizes LIST         imix (64:7,576:4,1500:1) or N[:WEIGHT],...
                           Data frames are rounded down to headers + 4k bytes; requests,
                           ACKs and CNPs have their protocol length.
      --vlan ID            add an 802.1Q tag
      --pcp N              802.1Q priority (default 3)
      --src-mac MAC        source MAC of host 0, + host index (default 02:00:00:00:00:01)
      --dst-mac MAC        destination MAC (the gateway port) (default 02:00:00:00:01:01)
      --src-base ADDR      first source address, IPv4 or IPv6 (defaults 10.0.0.1, fd00::1)
      --dst-base ADDR      first destination address (defaults 10.0.1.1, fd00:1::1)
      --dscp N             DSCP of RoCE packets (default 26)
      --ecn N              ECN of RoCE packets other than CNPs (default 2 = ECT(0))
      --cnp-dscp N         DSCP of CNPs, which are sent Not-ECT (default 48)
      --ttl N              IPv4 TTL / IPv6 hop limit (default 64)
      --pkey N             BTH partition key (default 0xffff)
      --dest-qp-base N     DestQP of the first QP; QP i gets base + i (default 0x100)
      --non-roce-every K   every K-th frame is ARP / ND / TCP SYN / UDP, in turn (default 0)
      --interval-ns N      timestamp spacing (default 1000)
  -q, --quiet              no summary line
  -h, --help
)";

template <typename T>
bool parse_uint(std::string_view text, T& out) {
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    text.remove_prefix(2);
  }
  if (text.empty()) return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out, base);
  return ec == std::errc() && ptr == text.data() + text.size();
}

[[noreturn]] void fail(const std::string& message) {
  std::fprintf(stderr, "roce-gen: %s\n", message.c_str());
  std::exit(2);
}

template <typename T>
T number_option(const char* name, const char* text, uint64_t max) {
  uint64_t v = 0;
  if (!parse_uint(text, v) || v > max) {
    fail(std::string("--") + name + ": '" + text + "' is not a number in 0.." +
         std::to_string(max));
  }
  return T(v);
}

enum Option : int {
  kManifest = 256,
  kSeed,
  kHosts,
  kQps,
  kRemoteHosts,
  kFamily,
  kOpcodes,
  kSize,
  kSizes,
  kVlan,
  kPcp,
  kSrcMac,
  kDstMac,
  kSrcBase,
  kDstBase,
  kDscp,
  kEcn,
  kCnpDscp,
  kTtl,
  kPkey,
  kDestQpBase,
  kNonRoceEvery,
  kIntervalNs,
  kTxPort,
  kRatePps,
  kRateMbps,
  kDuration,
  kBurst,
  kMbufs,
  kReportJson,
};

double real_option(const char* name, const char* text) {
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (end == text || *end != '\0' || !std::isfinite(v) || v < 0) {
    fail(std::string("--") + name + ": '" + text + "' is not a non-negative number");
  }
  return v;
}

void on_signal(int) {
  rocegen::request_tx_stop();
}

// Transmit mode: sends the workload on a DPDK port and prints (and optionally writes as
// JSON) what was sent and the rate achieved.
int transmit(rocegen::Generator& gen, const rocegen::TxOptions& tx, const std::string& report_json,
             bool quiet) {
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  rocegen::TxReport r;
  std::string error;
  if (!rocegen::run_dpdk_tx(gen, tx, r, error)) fail(error);
  char target[64] = "unlimited";
  if (tx.rate_pps > 0) std::snprintf(target, sizeof target, "%.0f pps", tx.rate_pps);
  if (tx.rate_mbps > 0) std::snprintf(target, sizeof target, "%.3f Mbit/s", tx.rate_mbps);
  if (!quiet) {
    std::printf(
        "roce-gen: tx %s: sent %llu packets, %llu bytes in %.3f s: %.0f pps, %.3f Mbit/s "
        "(target %s); partial bursts retried %llu, unsent at stop %llu; rx %llu packets\n",
        tx.port.c_str(), static_cast<unsigned long long>(r.sent_packets),
        static_cast<unsigned long long>(r.sent_bytes), r.elapsed_s, r.achieved_pps, r.achieved_mbps,
        target, static_cast<unsigned long long>(r.tx_retries),
        static_cast<unsigned long long>(r.unsent_at_stop),
        static_cast<unsigned long long>(r.rx_packets));
  }
  if (!report_json.empty()) {
    std::ofstream out(report_json, std::ios::trunc);
    char json[512];
    std::snprintf(json, sizeof json,
                  "{\"port\": \"%s\", \"sent_packets\": %llu, \"sent_bytes\": %llu, "
                  "\"elapsed_s\": %.6f, \"achieved_pps\": %.1f, \"achieved_mbps\": %.4f, "
                  "\"target_pps\": %.1f, \"target_mbps\": %.4f, \"tx_retries\": %llu, "
                  "\"unsent_at_stop\": %llu, \"rx_packets\": %llu}\n",
                  tx.port.c_str(), static_cast<unsigned long long>(r.sent_packets),
                  static_cast<unsigned long long>(r.sent_bytes), r.elapsed_s, r.achieved_pps,
                  r.achieved_mbps, tx.rate_pps, tx.rate_mbps,
                  static_cast<unsigned long long>(r.tx_retries),
                  static_cast<unsigned long long>(r.unsent_at_stop),
                  static_cast<unsigned long long>(r.rx_packets));
    out << json;
    out.close();
    if (!out) fail("cannot write " + report_json);
  }
  return 0;
}

std::string csv_line(uint64_t index, const rocegen::FrameInfo& f) {
  const bool roce = f.kind == rocegen::FrameKind::roce;
  char line[256];
  std::snprintf(line, sizeof line, "%llu,%s,%s,%s,%u,%u,%u,%u,%u,%zu\n",
                static_cast<unsigned long long>(index), roce ? "roce" : "non-roce",
                f.family == net::Family::ipv4 ? "ipv4" : "ipv6",
                roce ? rocegen::to_string(f.opcode) : rocegen::to_string(f.non_roce), f.host, f.qp,
                roce ? f.dest_qp : 0u, roce ? f.psn : 0u, unsigned(f.udp_sport), f.len);
  return line;
}

}  // namespace

int main(int argc, char** argv) {
  // EAL arguments, if any, come before "--": initialise the EAL with them and parse the rest.
  int separator = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--") {
      separator = i;
      break;
    }
  }
  const bool dpdk_mode = separator > 0;
  std::vector<char*> app_argv;
  if (dpdk_mode) {
    std::vector<char*> eal_argv(argv, argv + separator);
    if (rte_eal_init(int(eal_argv.size()), eal_argv.data()) < 0) {
      fail("EAL initialisation failed (arguments before '--'): " +
           std::string(rte_strerror(rte_errno)));
    }
    app_argv.push_back(argv[0]);
    app_argv.insert(app_argv.end(), argv + separator + 1, argv + argc);
    app_argv.push_back(nullptr);
    argc = int(app_argv.size()) - 1;
    argv = app_argv.data();
  }
  rocegen::GenSpec spec;
  rocegen::TxOptions tx;
  std::string report_json;
  bool count_given = false;
  std::string output;
  std::string manifest;
  bool quiet = false;
  std::string error;

  static const option kLongOptions[] = {
      {"output", required_argument, nullptr, 'o'},
      {"manifest", required_argument, nullptr, kManifest},
      {"count", required_argument, nullptr, 'n'},
      {"seed", required_argument, nullptr, kSeed},
      {"hosts", required_argument, nullptr, kHosts},
      {"qps", required_argument, nullptr, kQps},
      {"remote-hosts", required_argument, nullptr, kRemoteHosts},
      {"family", required_argument, nullptr, kFamily},
      {"opcodes", required_argument, nullptr, kOpcodes},
      {"size", required_argument, nullptr, kSize},
      {"sizes", required_argument, nullptr, kSizes},
      {"vlan", required_argument, nullptr, kVlan},
      {"pcp", required_argument, nullptr, kPcp},
      {"src-mac", required_argument, nullptr, kSrcMac},
      {"dst-mac", required_argument, nullptr, kDstMac},
      {"src-base", required_argument, nullptr, kSrcBase},
      {"dst-base", required_argument, nullptr, kDstBase},
      {"dscp", required_argument, nullptr, kDscp},
      {"ecn", required_argument, nullptr, kEcn},
      {"cnp-dscp", required_argument, nullptr, kCnpDscp},
      {"ttl", required_argument, nullptr, kTtl},
      {"pkey", required_argument, nullptr, kPkey},
      {"dest-qp-base", required_argument, nullptr, kDestQpBase},
      {"non-roce-every", required_argument, nullptr, kNonRoceEvery},
      {"interval-ns", required_argument, nullptr, kIntervalNs},
      {"tx-port", required_argument, nullptr, kTxPort},
      {"rate-pps", required_argument, nullptr, kRatePps},
      {"rate-mbps", required_argument, nullptr, kRateMbps},
      {"duration", required_argument, nullptr, kDuration},
      {"burst", required_argument, nullptr, kBurst},
      {"mbufs", required_argument, nullptr, kMbufs},
      {"report-json", required_argument, nullptr, kReportJson},
      {"quiet", no_argument, nullptr, 'q'},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  int c;
  while ((c = getopt_long(argc, argv, "o:n:qh", kLongOptions, nullptr)) != -1) {
    const char* arg = optarg;
    switch (c) {
      case 'o':
        output = arg;
        break;
      case kManifest:
        manifest = arg;
        break;
      case 'n':
        spec.count = number_option<uint64_t>("count", arg, 1ull << 32);
        count_given = true;
        break;
      case kTxPort:
        tx.port = arg;
        break;
      case kRatePps:
        tx.rate_pps = real_option("rate-pps", arg);
        break;
      case kRateMbps:
        tx.rate_mbps = real_option("rate-mbps", arg);
        break;
      case kDuration:
        tx.duration_s = real_option("duration", arg);
        break;
      case kBurst:
        tx.burst = number_option<uint16_t>("burst", arg, 256);
        break;
      case kMbufs:
        tx.mbufs = number_option<uint32_t>("mbufs", arg, 1u << 24);
        break;
      case kReportJson:
        report_json = arg;
        break;
      case kSeed:
        spec.seed = number_option<uint64_t>("seed", arg, UINT64_MAX);
        break;
      case kHosts:
        spec.hosts = number_option<uint32_t>("hosts", arg, UINT32_MAX);
        break;
      case kQps:
        spec.qps_per_host = number_option<uint32_t>("qps", arg, UINT32_MAX);
        break;
      case kRemoteHosts:
        spec.remote_hosts = number_option<uint32_t>("remote-hosts", arg, UINT32_MAX);
        break;
      case kFamily: {
        const std::string_view f = arg;
        if (f == "ipv4") {
          spec.family = rocegen::FamilyMode::ipv4;
        } else if (f == "ipv6") {
          spec.family = rocegen::FamilyMode::ipv6;
        } else if (f == "mixed") {
          spec.family = rocegen::FamilyMode::mixed;
        } else {
          fail(std::string("--family: '") + arg + "' is not ipv4, ipv6 or mixed");
        }
        break;
      }
      case kOpcodes: {
        auto mix = rocegen::parse_opcode_mix(arg, error);
        if (!mix) fail("--" + error);
        spec.opcodes = *mix;
        break;
      }
      case kSize:
      case kSizes: {
        auto mix = rocegen::parse_size_mix(arg, error);
        if (!mix) fail("--" + error);
        spec.sizes = *mix;
        break;
      }
      case kVlan:
        spec.vlan_id = number_option<uint16_t>("vlan", arg, 4094);
        break;
      case kPcp:
        spec.vlan_pcp = number_option<uint8_t>("pcp", arg, 7);
        break;
      case kSrcMac:
      case kDstMac: {
        auto mac = net::parse_mac(arg);
        const char* name = c == kSrcMac ? "src-mac" : "dst-mac";
        if (!mac) fail(std::string("--") + name + ": '" + arg + "' is not a MAC address");
        (c == kSrcMac ? spec.src_mac : spec.dst_mac) = *mac;
        break;
      }
      case kSrcBase:
      case kDstBase: {
        const bool src = c == kSrcBase;
        const char* name = src ? "src-base" : "dst-base";
        auto ip = net::parse_ip(arg);
        if (!ip) fail(std::string("--") + name + ": '" + arg + "' is not an IP address");
        if (ip->family == net::Family::ipv4) {
          (src ? spec.src_base4 : spec.dst_base4) = ip->as_v4();
        } else {
          (src ? spec.src_base6 : spec.dst_base6) = ip->as_v6();
        }
        break;
      }
      case kDscp:
        spec.dscp = number_option<uint8_t>("dscp", arg, 63);
        break;
      case kEcn:
        spec.ecn = number_option<uint8_t>("ecn", arg, 3);
        break;
      case kCnpDscp:
        spec.cnp_dscp = number_option<uint8_t>("cnp-dscp", arg, 63);
        break;
      case kTtl:
        spec.ttl = number_option<uint8_t>("ttl", arg, 255);
        break;
      case kPkey:
        spec.pkey = number_option<uint16_t>("pkey", arg, 0xffff);
        break;
      case kDestQpBase:
        spec.dest_qp_base = number_option<uint32_t>("dest-qp-base", arg, 0xffffff);
        break;
      case kNonRoceEvery:
        spec.non_roce_every = number_option<uint64_t>("non-roce-every", arg, UINT64_MAX);
        break;
      case kIntervalNs:
        spec.interval_ns = number_option<uint64_t>("interval-ns", arg, 1000000000000ull);
        break;
      case 'q':
        quiet = true;
        break;
      case 'h':
        std::fputs(kUsage, stdout);
        return 0;
      default:
        std::fputs(kUsage, stderr);
        return 2;
    }
  }
  if (optind != argc) fail(std::string("unexpected argument '") + argv[optind] + "'");
  if (dpdk_mode) {
    if (tx.port.empty()) fail("--tx-port is required in transmit mode (EAL arguments given)");
    if (!output.empty() || !manifest.empty()) {
      fail("--output/--manifest and transmit mode (EAL arguments) are exclusive");
    }
    // A duration without a count: the workload never ends (QPs keep advancing their PSNs).
    if (tx.duration_s > 0 && !count_given) spec.count = UINT64_MAX;
    auto gen = rocegen::Generator::create(spec, error);
    if (!gen) fail("--" + error);
    const int rc = transmit(*gen, tx, report_json, quiet);
    rte_eal_cleanup();
    return rc;
  }
  if (!tx.port.empty() || tx.rate_pps > 0 || tx.rate_mbps > 0 || tx.duration_s > 0 ||
      !report_json.empty()) {
    fail("--tx-port/--rate-*/--duration/--report-json need EAL arguments before '--'");
  }
  if (output.empty()) fail("--output is required (see --help)");

  auto gen = rocegen::Generator::create(spec, error);
  if (!gen) fail("--" + error);
  auto writer = pcap::Writer::create(output, error);
  if (!writer) fail(error);
  std::ofstream manifest_out;
  if (!manifest.empty()) {
    manifest_out.open(manifest, std::ios::trunc);
    if (!manifest_out) fail("cannot create manifest " + manifest);
    manifest_out << "index,kind,family,name,host,qp,dest_qp,psn,udp_sport,len\n";
  }

  std::array<uint8_t, rocegen::kMaxFrameLen> buffer;
  rocegen::FrameInfo info;
  uint64_t bytes = 0;
  uint64_t by_family[2] = {};
  std::map<std::string, uint64_t> roce_counts;
  std::map<std::string, uint64_t> other_counts;
  while (size_t len = gen->next(buffer, info)) {
    if (!writer->write(buffer.data(), len, info.timestamp_ns)) fail("cannot write " + output);
    if (manifest_out.is_open()) manifest_out << csv_line(gen->produced() - 1, info);
    bytes += len;
    if (info.kind == rocegen::FrameKind::roce) {
      ++by_family[info.family == net::Family::ipv6 ? 1 : 0];
      ++roce_counts[rocegen::to_string(info.opcode)];
    } else {
      ++other_counts[rocegen::to_string(info.non_roce)];
    }
  }
  if (gen->produced() != spec.count) {
    fail("frame " + std::to_string(gen->produced() + 1) + " could not be built");
  }
  if (!writer->close()) fail("cannot write " + output);
  if (manifest_out.is_open()) {
    manifest_out.close();
    if (!manifest_out) fail("cannot write manifest " + manifest);
  }

  if (!quiet) {
    std::string line = "roce-gen: " + output + ": " + std::to_string(gen->produced()) +
                       " packets, " + std::to_string(bytes) + " bytes; roce ipv4 " +
                       std::to_string(by_family[0]) + ", ipv6 " + std::to_string(by_family[1]);
    // Fixed opcode order, so that summaries of different runs line up.
    line += "; opcodes";
    for (rocegen::Opcode op : rocegen::kAllOpcodes) {
      auto it = roce_counts.find(rocegen::to_string(op));
      if (it != roce_counts.end()) line += " " + it->first + "=" + std::to_string(it->second);
    }
    if (!other_counts.empty()) {
      line += "; non-roce";
      for (rocegen::NonRoceKind kind : rocegen::kAllNonRoceKinds) {
        auto it = other_counts.find(rocegen::to_string(kind));
        if (it != other_counts.end()) line += " " + it->first + "=" + std::to_string(it->second);
      }
    }
    std::puts(line.c_str());
  }
  return 0;
}
