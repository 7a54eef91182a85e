// SPDX-License-Identifier: BSD-3-Clause
// roce-gen: writes a deterministic RoCEv2 workload (N hosts x M QPs, opcode mix, sizes,
// IPv4/IPv6, optional VLAN and interleaved non-RoCE frames) into a pcap file, and optionally
// a CSV manifest of what every frame is meant to be (tests check it against dissectors).
// With EAL arguments before "--" it transmits the same workload on a DPDK port instead,
// pktgen-style, at a target rate (dpdk_tx.hpp).
#include <rte_eal.h>
#include <rte_errno.h>
#include <CLI/CLI.hpp>

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

constexpr const char* kDescription = R"(roce-gen: RoCEv2 frames (Ethernet, no FCS) into a pcap file.
  roce-gen -o FILE [options]
  roce-gen EAL-ARGS -- --tx-port PORT [--rate-pps N | --rate-mbps M] [--duration S] [options]
Same options and seed give a byte-identical file. With EAL arguments before '--', sends the
same frames on a DPDK port instead (e.g. -l 0 --no-huge -m 256 --no-pci
--vdev net_af_packet0,iface=veth0).)";

constexpr const char* kFooter =
    R"(Opcode names: send-first, send-middle, send-last, send-only, write-first, write-middle,
write-last, write-only, read-request, read-response-first, read-response-middle,
read-response-last, read-response-only, ack, cnp. Data frames are rounded down to headers +
4k bytes; requests, ACKs and CNPs have their protocol length.)";

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

// Decimal, or hexadecimal with 0x.
template <typename T>
T number(const std::string& name, const std::string& text, uint64_t max) {
  uint64_t v = 0;
  if (!parse_uint(std::string_view(text), v) || v > max) {
    throw CLI::ValidationError(name, "'" + text + "' is not a number in 0.." + std::to_string(max));
  }
  return T(v);
}

// A whole number option of at most `max` (hex allowed), stored into `to`.
template <typename T>
CLI::Option* add_number(CLI::App& app, const std::string& name, T& to, uint64_t max,
                        const std::string& help) {
  return app
      .add_option_function<std::string>(
          name, [name, &to, max](const std::string& v) { to = number<T>(name, v, max); }, help)
      ->type_name("N");
}

CLI::Option* add_seconds(CLI::App& app, const std::string& name, double& to,
                         const std::string& help) {
  return app
      .add_option_function<std::string>(
          name,
          [name, &to](const std::string& text) {
            char* end = nullptr;
            const double v = std::strtod(text.c_str(), &end);
            if (end == text.c_str() || *end != '\0' || !std::isfinite(v) || v < 0)
              throw CLI::ValidationError(name, "'" + text + "' is not a non-negative number");
            to = v;
          },
          help)
      ->type_name("N");
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

// Closed-loop mode: one rank of a collective (closed_loop.hpp). The report has every
// phase's start and done times (CLOCK_MONOTONIC ns) and the transport's counters.
int run_collective(rocegen::ClosedLoopSender& sender, const rocegen::ClosedLoopOptions& o,
                   const std::string& report_json, bool quiet) {
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  rocegen::ClosedLoopReport r;
  std::string error;
  const bool ok = rocegen::run_closed_loop(sender, o, r, error);
  if (!ok && r.elapsed_s == 0) fail(error);
  const rocegen::ClosedLoopCounters& c = sender.counters();
  if (!quiet) {
    std::printf(
        "roce-gen: rank %u: %s after %.3f s, phases %u of %u; data %llu packets "
        "(%llu retransmitted), acks %llu, naks %llu, timeouts %llu, cnps %llu, rate cuts %llu\n",
        sender.spec().rank, r.completed ? "done" : "NOT done", r.elapsed_s, sender.phase(),
        sender.total_phases(), static_cast<unsigned long long>(c.data_packets),
        static_cast<unsigned long long>(c.retransmitted), static_cast<unsigned long long>(c.acks),
        static_cast<unsigned long long>(c.naks), static_cast<unsigned long long>(c.timeouts),
        static_cast<unsigned long long>(c.cnps), static_cast<unsigned long long>(c.rate_cuts));
  }
  if (!report_json.empty()) {
    std::ofstream out(report_json, std::ios::trunc);
    const auto u = [](uint64_t v) { return std::to_string(v); };
    out << "{\"rank\": " << sender.spec().rank
        << ", \"completed\": " << (r.completed ? "true" : "false")
        << ", \"elapsed_s\": " << r.elapsed_s
        << ", \"phases_per_iteration\": " << sender.phases_per_iteration()
        << ", \"phases_done\": " << sender.phase() << ", \"rx_packets\": " << u(r.rx_packets)
        << ", \"data_packets\": " << u(c.data_packets) << ", \"data_bytes\": " << u(c.data_bytes)
        << ", \"retransmitted\": " << u(c.retransmitted) << ", \"acks\": " << u(c.acks)
        << ", \"naks\": " << u(c.naks) << ", \"nak_go_backs\": " << u(c.nak_go_backs)
        << ", \"timeouts\": " << u(c.timeouts) << ", \"cnps\": " << u(c.cnps)
        << ", \"rate_cuts\": " << u(c.rate_cuts) << ", \"messages_done\": " << u(c.messages_done)
        << ", \"bytes_done\": " << u(c.bytes_done) << ", \"phases\": [";
    const auto& t = sender.timings();
    for (size_t i = 0; i < t.size(); ++i) {
      out << (i ? ", " : "") << "[" << u(t[i].start_ns) << ", " << u(t[i].done_ns) << "]";
    }
    out << "], \"qps\": [";
    const auto views = sender.qp_views();
    for (size_t i = 0; i < views.size(); ++i) {
      char line[160];
      std::snprintf(line, sizeof line,
                    "%s{\"peer\": %u, \"dest_qp\": %u, \"rate_bps\": %.0f, \"alpha\": %.4f, "
                    "\"cnps\": %llu}",
                    i ? ", " : "", views[i].peer, views[i].dest_qp, views[i].rate_bps,
                    views[i].alpha, static_cast<unsigned long long>(views[i].cnps));
      out << line;
    }
    out << "]}\n";
    out.close();
    if (!out) fail("cannot write " + report_json);
  }
  if (!ok) fail(error);
  return r.completed ? 0 : 3;
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
  std::string output;
  std::string manifest;
  bool quiet = false;
  std::string error;

  CLI::App app(kDescription, "roce-gen");
  app.footer(kFooter);
  app.get_formatter()->column_width(26);
  // An option given twice takes the last value (as getopt did).
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  const std::string tx_group = "Transmit mode (EAL arguments given)";
  app.add_option("--tx-port", tx.port, "DPDK port name (net_af_packet0) or id (required)")
      ->type_name("PORT")
      ->group(tx_group);
  add_seconds(app, "--rate-pps", tx.rate_pps, "target rate in frames per second")->group(tx_group);
  add_seconds(app, "--rate-mbps", tx.rate_mbps,
              "target rate in Mbit/s of Ethernet frames (neither: as fast as the port takes them)")
      ->group(tx_group);
  add_seconds(app, "--duration", tx.duration_s,
              "seconds to send; with --count, whichever ends first; without, endless")
      ->group(tx_group);
  add_seconds(app, "--linger", tx.linger_s,
              "seconds to keep the port open after the last frame (RX still counted): rings "
              "this process owns (net_memif client) drain into the peer")
      ->group(tx_group);
  add_seconds(app, "--wait-link", tx.wait_link_s,
              "seconds to wait for the port's link before sending; fail if it stays down "
              "(default 0: do not wait)")
      ->group(tx_group);
  add_number(app, "--burst", tx.burst, 256, "frames per TX burst (default 32)")->group(tx_group);
  add_number(app, "--mbufs", tx.mbufs, 1u << 24, "mbuf pool size (default 4095)")->group(tx_group);
  app.add_option("--report-json", report_json, "write the transmit report as JSON")
      ->type_name("FILE")
      ->group(tx_group);

  // Closed loop (a collective with DCQCN and go-back-N): given --collective.
  const std::string cl_group = "Closed-loop collective (transmit mode, --collective given)";
  rocegen::ClosedLoopSpec cl;
  rocegen::ClosedLoopOptions clo;
  std::string collective;
  std::string ranks_text;
  double line_rate_mbps = 40, dcqcn_scale = 1e-3, rto_ms = 100;
  bool no_dcqcn = false;
  app.add_option("--collective", collective, "alltoall or allreduce (ring): closed-loop mode")
      ->check(CLI::IsMember({"alltoall", "allreduce"}))
      ->group(cl_group);
  app.add_option("--ranks", ranks_text, "every rank's IPv4 address, comma-separated, in order")
      ->type_name("LIST")
      ->group(cl_group);
  add_number(app, "--rank", cl.rank, 1023, "this sender's index in --ranks")->group(cl_group);
  add_number(app, "--bytes", cl.bytes, 1ull << 40, "collective size per rank (default 1 MiB)")
      ->group(cl_group);
  add_number(app, "--iterations", cl.iterations, 1u << 20, "repetitions (default 1)")
      ->group(cl_group);
  add_number(app, "--qps-per-peer", cl.qps_per_peer, 256, "QPs per peer (default 1)")
      ->group(cl_group);
  add_seconds(app, "--line-rate-mbps", line_rate_mbps, "the NIC's rate, R_line (default 40)")
      ->group(cl_group);
  add_seconds(app, "--dcqcn-scale", dcqcn_scale,
              "DCQCN: the paper's rates times this, its times divided by it (default 0.001)")
      ->group(cl_group);
  app.add_flag("--no-dcqcn", no_dcqcn, "no rate control: every QP at line rate")->group(cl_group);
  add_number(app, "--window", cl.window_packets, 1u << 20,
             "unacknowledged packets per QP at most (default 64)")
      ->group(cl_group);
  add_number(app, "--ack-every", cl.ack_every, 1u << 20,
             "AckReq every N packets, and on each message's last (default 16)")
      ->group(cl_group);
  add_seconds(app, "--rto-ms", rto_ms, "go back N after this long without progress (100)")
      ->group(cl_group);
  app.add_option("--barrier-dir", clo.barrier_dir, "directory shared by all ranks (barrier)")
      ->type_name("DIR")
      ->group(cl_group);
  add_seconds(app, "--timeout", clo.timeout_s, "give up after this many seconds (600)")
      ->group(cl_group);

  app.add_option("-o,--output", output, "pcap file to write (required)")->type_name("FILE");
  app.add_option("--manifest", manifest, "also write a CSV line per frame: what it is meant to be")
      ->type_name("FILE");
  CLI::Option* count = add_number(app, "-n,--count", spec.count, 1ull << 32,
                                  "frames in total, RoCE and non-RoCE (default 1000)");
  add_number(app, "--seed", spec.seed, UINT64_MAX, "random seed (default 1)");
  add_number(app, "--hosts", spec.hosts, UINT32_MAX,
             "local hosts, i.e. source addresses (default 1)");
  add_number(app, "--qps", spec.qps_per_host, UINT32_MAX, "queue pairs per host (default 1)");
  add_number(app, "--remote-hosts", spec.remote_hosts, UINT32_MAX,
             "destination addresses (default = hosts); QP q of host h talks to remote "
             "(h + q) mod N");
  app.add_option_function<std::string>(
         "--family",
         [&spec](const std::string& f) {
           spec.family = f == "ipv6"    ? rocegen::FamilyMode::ipv6
                         : f == "mixed" ? rocegen::FamilyMode::mixed
                                        : rocegen::FamilyMode::ipv4;
         },
         "ipv4 (default), ipv6 or mixed (QPs alternate)")
      ->type_name("F")
      ->check(CLI::IsMember({"ipv4", "ipv6", "mixed"}));
  app.add_option_function<std::string>(
         "--opcodes",
         [&spec](const std::string& v) {
           std::string why;
           auto mix = rocegen::parse_opcode_mix(v, why);
           if (!mix) throw CLI::ValidationError("--" + why);
           spec.opcodes = *mix;
         },
         "NAME[:WEIGHT],... or a mix: default, all, writes, sends, reads, control")
      ->type_name("LIST");
  const auto sizes = [&spec](const std::string& v) {
    std::string why;
    auto mix = rocegen::parse_size_mix(v, why);
    if (!mix) throw CLI::ValidationError("--" + why);
    spec.sizes = *mix;
  };
  app.add_option_function<std::string>("--size", sizes,
                                       "frame length in bytes without FCS (default 1024)")
      ->type_name("N");
  app.add_option_function<std::string>("--sizes", sizes,
                                       "imix (64:7,576:4,1500:1) or N[:WEIGHT],...")
      ->type_name("LIST");
  app.add_option_function<std::string>(
         "--message-packets",
         [&spec](const std::string& v) {
           const size_t dash = v.find('-');
           const std::string_view text(v);
           uint32_t low = 0, high = 0;
           const bool ok = dash == std::string::npos
                               ? parse_uint(text, low) && parse_uint(text, high)
                               : parse_uint(text.substr(0, dash), low) &&
                                     parse_uint(text.substr(dash + 1), high);
           if (!ok) throw CLI::ValidationError("--message-packets: want N or MIN-MAX, got " + v);
           spec.message_min = low;
           spec.message_max = high;
         },
         "realistic RDMA traffic: each QP sends whole messages of MIN..MAX packets back to "
         "back (e.g. 16-64), QPs interleaved; writes, sends and read responses go as first, "
         "middle..., last")
      ->type_name("MIN-MAX");
  add_number(app, "--vlan", spec.vlan_id, 4094, "add an 802.1Q tag with this ID");
  add_number(app, "--pcp", spec.vlan_pcp, 7, "802.1Q priority (default 3)");
  const auto mac = [&app](const std::string& name, net::MacAddr& to, const std::string& help) {
    app.add_option_function<std::string>(
           name,
           [name, &to](const std::string& v) {
             auto m = net::parse_mac(v);
             if (!m) throw CLI::ValidationError(name, "'" + v + "' is not a MAC address");
             to = *m;
           },
           help)
        ->type_name("MAC");
  };
  mac("--src-mac", spec.src_mac, "source MAC of host 0, + host index (default 02:00:00:00:00:01)");
  mac("--dst-mac", spec.dst_mac, "destination MAC, the gateway port (default 02:00:00:00:01:01)");
  // Given twice, once per family (--src-base 10.0.0.1 --src-base fd00::1).
  const auto base = [&app, &spec](const std::string& name, bool src, const std::string& help) {
    app.add_option_function<std::vector<std::string>>(
           name,
           [name, src, &spec](const std::vector<std::string>& values) {
             for (const std::string& v : values) {
               auto ip = net::parse_ip(v);
               if (!ip) throw CLI::ValidationError(name, "'" + v + "' is not an IP address");
               if (ip->family == net::Family::ipv4) {
                 (src ? spec.src_base4 : spec.dst_base4) = ip->as_v4();
               } else {
                 (src ? spec.src_base6 : spec.dst_base6) = ip->as_v6();
               }
             }
           },
           help)
        ->type_name("ADDR")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  };
  base("--src-base", true, "first source address, IPv4 or IPv6 (defaults 10.0.0.1, fd00::1)");
  base("--dst-base", false, "first destination address (defaults 10.0.1.1, fd00:1::1)");
  add_number(app, "--dscp", spec.dscp, 63, "DSCP of RoCE packets (default 26)");
  add_number(app, "--ecn", spec.ecn, 3, "ECN of RoCE packets other than CNPs (default 2 = ECT(0))");
  add_number(app, "--cnp-dscp", spec.cnp_dscp, 63, "DSCP of CNPs, sent Not-ECT (default 48)");
  add_number(app, "--ttl", spec.ttl, 255, "IPv4 TTL / IPv6 hop limit (default 64)");
  add_number(app, "--pkey", spec.pkey, 0xffff, "BTH partition key (default 0xffff)");
  add_number(app, "--dest-qp-base", spec.dest_qp_base, 0xffffff,
             "DestQP of the first QP; QP i gets base + i (default 0x100)");
  add_number(app, "--non-roce-every", spec.non_roce_every, UINT64_MAX,
             "every K-th frame is ARP / ND / TCP SYN / UDP, in turn (default 0)");
  add_number(app, "--interval-ns", spec.interval_ns, 1000000000000ull,
             "timestamp spacing (default 1000)");
  app.add_flag("-q,--quiet", quiet, "no summary line");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::ParseError& e) {
    fail(std::string(e.what()) + " (roce-gen --help)");
  }
  const bool count_given = count->count() > 0;
  if (dpdk_mode) {
    if (tx.port.empty()) fail("--tx-port is required in transmit mode (EAL arguments given)");
    if (!collective.empty()) {
      cl.collective = collective == "allreduce" ? rocegen::Collective::allreduce
                                                : rocegen::Collective::alltoall;
      size_t pos = 0;
      while (pos <= ranks_text.size() && !ranks_text.empty()) {
        const size_t comma = std::min(ranks_text.find(',', pos), ranks_text.size());
        const std::string item = ranks_text.substr(pos, comma - pos);
        auto ip = net::parse_ip(item);
        if (!ip || ip->family != net::Family::ipv4) fail("--ranks: '" + item + "' is not IPv4");
        cl.ranks.push_back(ip->as_v4());
        pos = comma + 1;
      }
      cl.src_mac = spec.src_mac;
      cl.dst_mac = spec.dst_mac;
      cl.dscp = spec.dscp;
      cl.ecn = spec.ecn;
      cl.seed = spec.seed;
      cl.dest_qp_base = spec.dest_qp_base;
      if (!spec.sizes.empty()) cl.frame_len = spec.sizes.front().frame_len;
      cl.dcqcn = !no_dcqcn;
      if (!(line_rate_mbps > 0)) fail("--line-rate-mbps must be positive");
      if (!(dcqcn_scale > 0)) fail("--dcqcn-scale must be positive");
      cl.dcqcn_params = rocegen::DcqcnParams::paper_scaled(line_rate_mbps * 1e6, dcqcn_scale);
      cl.rto_ns = uint64_t(rto_ms * 1e6);
      auto sender = rocegen::ClosedLoopSender::create(cl, error);
      if (!sender) fail("--" + error);
      clo.port = tx.port;
      clo.burst = tx.burst;
      clo.mbufs = tx.mbufs;
      const int rc = run_collective(*sender, clo, report_json, quiet);
      rte_eal_cleanup();
      return rc;
    }
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
