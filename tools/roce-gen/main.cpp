// SPDX-License-Identifier: BSD-3-Clause
// roce-gen: writes a deterministic RoCEv2 workload (N hosts x M QPs, opcode mix, sizes,
// IPv4/IPv6, optional VLAN and interleaved non-RoCE frames) into a pcap file, and optionally
// a CSV manifest of what every frame is meant to be (tests check it against dissectors).
#include <getopt.h>

#include <array>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <string_view>

#include "net/addr.hpp"
#include "pcap/pcap.hpp"
#include "roce-gen/roce_gen.hpp"

namespace {

using namespace srv6gw;

constexpr const char* kUsage = R"(usage: roce-gen -o FILE [options]

Writes RoCEv2 frames (Ethernet, no FCS) into a classic pcap file. Same options and seed
give a byte-identical file.

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
};

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
  rocegen::GenSpec spec;
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
