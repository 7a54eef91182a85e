// SPDX-License-Identifier: BSD-3-Clause
// srv6gw-pcap: the packet core applied offline, pcap in, pcap out. It is how the external
// oracles (tshark, scapy, the Linux kernel's SRv6) see exactly what the gateway would emit,
// without DPDK: the same parse_frame, encap templates and decap code the data plane runs.
//
//   srv6gw-pcap encap --in IN --out OUT --sids A,B,C --source ADDR
//               [--mode encaps|encaps-red|usid] [--usid-block 32 --usid-len 16]
//               [--tag N] [--hop-limit N] [--dst-mac M --src-mac M]
//               [--path-id-in-source] [--source-entropy-bits N]
//   srv6gw-pcap decap --in IN --out OUT [--behavior dx4|dx6|dt46] [--dst-mac M --src-mac M]
//   srv6gw-pcap parse --in IN
#include <CLI/CLI.hpp>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/model.hpp"
#include "net/addr.hpp"
#include "net/headers.hpp"
#include "net/icrc.hpp"
#include "net/l2.hpp"
#include "net/parse.hpp"
#include "pcap/pcap.hpp"
#include "srv6/decap.hpp"
#include "srv6/encap.hpp"

namespace {

using namespace srv6gw;

// Exit codes: 0 done, 1 a file could not be read or written, 2 bad command line.
constexpr int kExitIo = 1;
constexpr int kExitUsage = 2;

constexpr const char* kFooter =
    "encap: RoCEv2 frames become Ethernet (no VLAN tag, ethertype 0x86DD) + outer IPv6\n"
    "       (+ SRH) + the inner IP packet (Ethernet padding removed); other frames are\n"
    "       copied unchanged; malformed frames are dropped and counted.\n"
    "decap: IPv6 frames are decapsulated as the local SID behavior says; non-IPv6 frames\n"
    "       are copied unchanged; frames that fail decapsulation are dropped and counted.\n"
    "parse: one classification line per frame.\n"
    "Input: pcap or pcapng (as tshark and dumpcap write it); output: pcap.";

// A command-line mistake: reported with a pointer to --help, exit code 2.
struct UsageError {
  std::string message;
};

struct Options {
  std::string command;
  std::string in;
  std::string out;
  std::vector<net::Ipv6Addr> sids;
  std::optional<net::Ipv6Addr> source;
  srv6::EncapMode mode = srv6::EncapMode::encaps;
  srv6::UsidFormat usid;
  uint16_t tag = 0;
  uint8_t hop_limit = 64;
  // engine/path-id-in-source and engine/source-entropy-bits (docs/design/engine.md): what the
  // gateway writes into the outer source.
  bool path_id_in_source = false;
  unsigned source_entropy_bits = 0;
  std::optional<net::MacAddr> dst_mac;
  std::optional<net::MacAddr> src_mac;
  srv6::LocalSidBehavior behavior = srv6::LocalSidBehavior::end_dt46;
};

// "A,B,C" -> SIDs; the entry that is not an address is named.
std::vector<net::Ipv6Addr> parse_sid_list(std::string_view text) {
  std::vector<net::Ipv6Addr> sids;
  size_t index = 0;
  while (true) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    ++index;
    auto sid = net::parse_ipv6(item);
    if (!sid) {
      throw CLI::ValidationError("--sids", "entry " + std::to_string(index) + " '" +
                                               std::string(item) + "' is not an IPv6 address");
    }
    sids.push_back(*sid);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return sids;
}

void add_mac_option(CLI::App& cmd, const std::string& name, std::optional<net::MacAddr>& to,
                    const std::string& help) {
  cmd.add_option_function<std::string>(
         name,
         [&to, name](const std::string& v) {
           to = net::parse_mac(v);
           if (!to) throw CLI::ValidationError(name, "'" + v + "' is not a MAC");
         },
         help)
      ->type_name("MAC");
}

// The command line, as CLI11 describes it; parsing fills `o`.
void describe(CLI::App& app, Options& o) {
  app.name("srv6gw-pcap");
  app.description(
      "the gateway's packet core offline (parse, encap templates, decap), "
      "pcap in, pcap out.");
  app.footer(kFooter);
  app.require_subcommand(1);
  // An option given twice takes the last value (as before CLI11); subcommands inherit it.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  CLI::App* encap = app.add_subcommand("encap", "encapsulate RoCEv2 frames in SRv6");
  CLI::App* decap = app.add_subcommand("decap", "decapsulate as a local SID");
  CLI::App* parse = app.add_subcommand("parse", "classify every frame");
  for (CLI::App* cmd : {encap, decap, parse}) {
    cmd->add_option("--in", o.in, "input capture (pcap or pcapng)")->type_name("IN")->required();
    cmd->callback([cmd, &o] { o.command = cmd->get_name(); });
  }
  for (CLI::App* cmd : {encap, decap}) {
    cmd->add_option("--out", o.out, "output pcap")->type_name("OUT")->required();
    add_mac_option(*cmd, "--dst-mac", o.dst_mac, "destination MAC (default: the input frame's)");
    add_mac_option(*cmd, "--src-mac", o.src_mac, "source MAC (default: the input frame's)");
  }
  encap
      ->add_option_function<std::string>(
          "--sids", [&o](const std::string& v) { o.sids = parse_sid_list(v); },
          "segment list, first segment first")
      ->type_name("A,B,C")
      ->required();
  encap
      ->add_option_function<std::string>(
          "--source",
          [&o](const std::string& v) {
            o.source = net::parse_ipv6(v);
            if (!o.source) throw CLI::ValidationError("--source", "'" + v + "' is not IPv6");
          },
          "outer source address")
      ->type_name("ADDR")
      ->required();
  encap
      ->add_option_function<std::string>(
          "--mode", [&o](const std::string& v) { o.mode = *config::parse_encap_mode(v); },
          "encaps (default), encaps-red or usid")
      ->type_name("MODE")
      ->check(CLI::IsMember(net::all_names(config::kEncapModeNames)));
  // 8-bit fields through `unsigned`: CLI11 would read a uint8_t as a character.
  CLI::Option* block =
      encap
          ->add_option_function<unsigned>(
              "--usid-block", [&o](const unsigned& v) { o.usid.block_bits = uint8_t(v); },
              "uSID block bits")
          ->type_name("BITS")
          ->check(CLI::Range(0, 128));
  CLI::Option* len =
      encap
          ->add_option_function<unsigned>(
              "--usid-len", [&o](const unsigned& v) { o.usid.usid_bits = uint8_t(v); },
              "uSID length in bits")
          ->type_name("BITS")
          ->check(CLI::Range(0, 128));
  encap->add_option("--tag", o.tag, "SRH tag")->type_name("N");
  encap
      ->add_option_function<unsigned>(
          "--hop-limit", [&o](const unsigned& v) { o.hop_limit = uint8_t(v); },
          "outer hop limit (default 64)")
      ->type_name("N")
      ->check(CLI::Range(1, 255));
  encap->add_flag("--path-id-in-source", o.path_id_in_source,
                  "without an SRH, --tag goes into the low 16 bits of the outer source "
                  "(engine/path-id-in-source); --source needs them zero");
  encap
      ->add_option("--source-entropy-bits", o.source_entropy_bits,
                   "low N bits of each flow's flow label into outer source bits 16..16+N-1 "
                   "(engine/source-entropy-bits; default 0 = off); --source needs its low "
                   "16+N bits zero")
      ->type_name("N")
      ->check(CLI::Range(0u, srv6::kMaxSourceEntropyBits));
  encap->callback([encap, block, len, &o] {
    o.command = encap->get_name();
    if ((block->count() || len->count()) && o.mode != srv6::EncapMode::usid)
      throw CLI::ValidationError("--usid-block/--usid-len", "only apply to --mode usid");
    // As the gateway's validation: the fields written into the source must be zero there.
    if (o.path_id_in_source && !srv6::source_has_path_id_room(*o.source))
      throw CLI::ValidationError("--source",
                                 "the low 16 bits must be zero for --path-id-in-source");
    if (o.source_entropy_bits && !srv6::source_has_entropy_room(*o.source, o.source_entropy_bits))
      throw CLI::ValidationError("--source", "the low " +
                                                 std::to_string(16 + o.source_entropy_bits) +
                                                 " bits must be zero for --source-entropy-bits " +
                                                 std::to_string(o.source_entropy_bits));
  });
  decap
      ->add_option_function<std::string>(
          "--behavior",
          [&o](const std::string& v) {
            o.behavior = v == "dx4"   ? srv6::LocalSidBehavior::end_dx4
                         : v == "dx6" ? srv6::LocalSidBehavior::end_dx6
                                      : srv6::LocalSidBehavior::end_dt46;
          },
          "dx4, dx6 or dt46 (default)")
      ->type_name("B")
      ->check(CLI::IsMember({"dx4", "dx6", "dt46"}));
}

Options parse_options(int argc, char** argv, std::string& help) {
  Options o;
  CLI::App app;
  describe(app, o);
  help = app.help();
  if (argc < 2) throw UsageError{"missing command (encap, decap or parse)"};
  const std::string_view command = argv[1];
  if (command.rfind('-', 0) != 0 && command != "encap" && command != "decap" && command != "parse")
    throw UsageError{"unknown command '" + std::string(command) + "' (encap, decap or parse)"};
  if (command.rfind('-', 0) == 0 && command != "-h" && command != "--help")
    throw UsageError{"unknown option '" + std::string(command) +
                     "': the command comes first (encap, decap or parse)"};
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    if (app.get_subcommands().empty()) {
      std::fputs(app.help().c_str(), stdout);
    } else {
      // CLI11 2.1 names a subcommand alone in its usage line.
      std::string text = app.get_subcommands().front()->help();
      if (const auto at = text.find("Usage: "); at != std::string::npos)
        text.insert(at + 7, "srv6gw-pcap ");
      std::fputs(text.c_str(), stdout);
    }
    std::exit(0);
  } catch (const CLI::ParseError& e) {
    // CLI11 reports a missing --in before an option it does not know: name the unknown one.
    if (const auto extra = app.remaining(true); !extra.empty())
      throw UsageError{"unknown option '" + extra.front() + "'"};
    throw UsageError{e.what()};
  }
  return o;
}

// Per-outcome counters of one run, printed at the end.
struct Counts {
  std::array<uint64_t, size_t(net::ParseStatus::count_)> parse{};
  std::array<uint64_t, size_t(srv6::DecapStatus::count_)> decap{};
  uint64_t frames = 0;
  uint64_t encapsulated = 0;
  uint64_t decapsulated = 0;
  uint64_t passed = 0;   // written unchanged
  uint64_t dropped = 0;  // not written
};

bool is_pass_through(net::ParseStatus s) {
  return s == net::ParseStatus::not_ip || s == net::ParseStatus::not_udp ||
         s == net::ParseStatus::not_roce;
}

void put_u16(uint8_t* p, uint16_t v) {
  p[0] = uint8_t(v >> 8);
  p[1] = uint8_t(v);
}

// Ethernet header of an output frame: MACs from the options, else those of the input frame.
void write_ethernet(const Options& o, std::span<const uint8_t> in_frame, uint16_t ethertype,
                    uint8_t* out) {
  if (o.dst_mac) {
    std::memcpy(out, o.dst_mac->bytes.data(), 6);
  } else {
    std::memcpy(out, in_frame.data(), 6);
  }
  if (o.src_mac) {
    std::memcpy(out + 6, o.src_mac->bytes.data(), 6);
  } else {
    std::memcpy(out + 6, in_frame.data() + 6, 6);
  }
  put_u16(out + 12, ethertype);
}

std::optional<pcap::Reader> open_input(const std::string& path) {
  std::string error;
  auto reader = pcap::Reader::open(path, error);
  if (!reader) {
    std::fprintf(stderr, "srv6gw-pcap: cannot read %s: %s\n", path.c_str(), error.c_str());
    return std::nullopt;
  }
  if (reader->link_type() != pcap::Reader::kEthernet) {
    std::fprintf(stderr, "srv6gw-pcap: %s: link type %s is not Ethernet\n", path.c_str(),
                 pcap::link_type_name(reader->link_type()).c_str());
    return std::nullopt;
  }
  return reader;
}

std::optional<pcap::Writer> open_output(const std::string& path) {
  std::string error;
  auto writer = pcap::Writer::create(path, error);
  if (!writer) {
    std::fprintf(stderr, "srv6gw-pcap: cannot write %s: %s\n", path.c_str(), error.c_str());
  }
  return writer;
}

// After the loop: a truncated input record is an error, not a silent end of file.
bool input_ended_cleanly(const pcap::Reader& reader, const std::string& path) {
  if (reader.error().empty()) return true;
  std::fprintf(stderr, "srv6gw-pcap: %s: %s\n", path.c_str(), reader.error().c_str());
  return false;
}

bool write_or_report(pcap::Writer& writer, const std::string& path, const uint8_t* data, size_t len,
                     uint64_t ts) {
  if (writer.write(data, len, ts)) return true;
  std::fprintf(stderr, "srv6gw-pcap: write to %s failed: %s\n", path.c_str(), std::strerror(errno));
  return false;
}

// One line per outcome: "  <layer> <reason> <count> [(passed|dropped)]".
void print_count(const char* layer, const char* reason, uint64_t count, const char* fate) {
  std::printf("  %-5s %-22s %8llu%s\n", layer, reason, (unsigned long long)count, fate);
}

// `rewriting` is false for the parse command, which neither passes nor drops anything.
void print_parse_counts(const Counts& c, bool rewriting) {
  for (size_t i = 0; i < c.parse.size(); ++i) {
    if (c.parse[i] == 0) continue;
    const auto s = net::ParseStatus(i);
    const char* fate = !rewriting || s == net::ParseStatus::ok ? ""
                       : is_pass_through(s)                    ? " (passed)"
                                                               : " (dropped)";
    print_count("parse", net::to_string(s), c.parse[i], fate);
  }
}

int run_encap(const Options& o) {
  srv6::TemplateSpec spec;
  spec.source = *o.source;
  spec.sids = o.sids;
  spec.mode = o.mode;
  spec.usid = o.usid;
  spec.tag = o.tag;
  spec.hop_limit = o.hop_limit;
  srv6::EncapTemplate tmpl;
  const srv6::BuildStatus built = srv6::build_template(spec, tmpl);
  if (built != srv6::BuildStatus::ok) {
    std::fprintf(stderr, "srv6gw-pcap: --sids (%zu SIDs, mode %s) refused: %s\n", o.sids.size(),
                 srv6::to_string(o.mode), srv6::to_string(built));
    return kExitUsage;
  }

  auto reader = open_input(o.in);
  if (!reader) return kExitIo;
  auto writer = open_output(o.out);
  if (!writer) return kExitIo;

  Counts c;
  std::vector<uint8_t> out;
  while (auto pkt = reader->next()) {
    ++c.frames;
    const std::span<const uint8_t> frame(pkt->data);
    net::PacketInfo info;
    const net::ParseStatus st = net::parse_frame(frame, info);
    ++c.parse[size_t(st)];
    if (st != net::ParseStatus::ok) {
      if (!is_pass_through(st)) {
        ++c.dropped;
        continue;
      }
      ++c.passed;
      if (!write_or_report(*writer, o.out, frame.data(), frame.size(), pkt->timestamp_ns)) {
        return kExitIo;
      }
      continue;
    }
    // The inner packet is the IP packet exactly: l3_len excludes any Ethernet padding.
    const auto inner = frame.subspan(info.l3_offset, info.l3_len);
    out.resize(net::kEthHeaderLen + tmpl.size + inner.size());
    write_ethernet(o, frame, net::kEthTypeIpv6, out.data());
    srv6::EncapFields f;
    f.inner_len = uint16_t(inner.size());
    f.inner_proto = info.family == net::Family::ipv4 ? net::kProtoIpv4 : net::kProtoIpv6;
    f.traffic_class = uint8_t(info.dscp << 2 | info.ecn);
    f.flow_label = net::outer_flow_label(info);
    f.tag = o.tag;
    f.tag_in_source = o.path_id_in_source;
    srv6::write_encap(tmpl, out.data() + net::kEthHeaderLen, f);
    srv6::write_source_entropy(out.data() + net::kEthHeaderLen,
                               srv6::source_entropy_mask(o.source_entropy_bits), f.flow_label);
    std::memcpy(out.data() + net::kEthHeaderLen + tmpl.size, inner.data(), inner.size());
    ++c.encapsulated;
    if (!write_or_report(*writer, o.out, out.data(), out.size(), pkt->timestamp_ns)) {
      return kExitIo;
    }
  }
  if (!input_ended_cleanly(*reader, o.in)) return kExitIo;

  std::printf("encap mode %s, %zu SIDs, outer header %u bytes, first destination %s\n",
              srv6::to_string(o.mode), o.sids.size(), unsigned(tmpl.size),
              net::to_string(tmpl.first_destination).c_str());
  if (o.path_id_in_source || o.source_entropy_bits)
    std::printf("outer source: path id %s, %u flow entropy bits\n",
                !o.path_id_in_source ? "not carried"
                : tmpl.has_srh       ? "in the SRH tag (there is an SRH)"
                                     : "in the low 16 bits",
                o.source_entropy_bits);
  std::printf("frames %llu: encapsulated %llu, passed %llu, dropped %llu\n",
              (unsigned long long)c.frames, (unsigned long long)c.encapsulated,
              (unsigned long long)c.passed, (unsigned long long)c.dropped);
  print_parse_counts(c, true);
  return 0;
}

int run_decap(const Options& o) {
  auto reader = open_input(o.in);
  if (!reader) return kExitIo;
  auto writer = open_output(o.out);
  if (!writer) return kExitIo;

  Counts c;
  uint64_t not_ipv6 = 0;
  uint64_t truncated_l2 = 0;
  std::vector<uint8_t> out;
  while (auto pkt = reader->next()) {
    ++c.frames;
    std::span<uint8_t> frame(pkt->data);
    // Ethernet and up to two VLAN tags (the data plane's walk); the outer packet must be
    // IPv6. A third tag is passed like any other non-IPv6 frame, as the gateway does.
    net::L2Header l2;
    const net::ParseStatus l2_status =
        net::walk_l2(frame.data(), frame.size(), l2, [](unsigned, uint16_t, uint16_t) {});
    if (l2_status == net::ParseStatus::truncated_eth ||
        l2_status == net::ParseStatus::truncated_vlan) {
      ++truncated_l2;
      ++c.dropped;
      continue;
    }
    if (l2_status != net::ParseStatus::ok || l2.ethertype != net::kEthTypeIpv6) {
      ++not_ipv6;
      ++c.passed;
      if (!write_or_report(*writer, o.out, frame.data(), frame.size(), pkt->timestamp_ns)) {
        return kExitIo;
      }
      continue;
    }
    const size_t l3 = l2.l3_offset;
    srv6::DecapResult r;
    const srv6::DecapStatus st = srv6::decap(frame.subspan(l3), o.behavior, r);
    ++c.decap[size_t(st)];
    if (st != srv6::DecapStatus::ok) {
      ++c.dropped;
      continue;
    }
    const auto inner = frame.subspan(l3 + r.inner_offset, r.inner_len);
    out.resize(net::kEthHeaderLen + inner.size());
    write_ethernet(o, frame,
                   r.inner_family == net::Family::ipv4 ? net::kEthTypeIpv4 : net::kEthTypeIpv6,
                   out.data());
    std::memcpy(out.data() + net::kEthHeaderLen, inner.data(), inner.size());
    ++c.decapsulated;
    if (!write_or_report(*writer, o.out, out.data(), out.size(), pkt->timestamp_ns)) {
      return kExitIo;
    }
  }
  if (!input_ended_cleanly(*reader, o.in)) return kExitIo;

  std::printf("decap behavior %s\n", srv6::to_string(o.behavior));
  std::printf("frames %llu: decapsulated %llu, passed %llu, dropped %llu\n",
              (unsigned long long)c.frames, (unsigned long long)c.decapsulated,
              (unsigned long long)c.passed, (unsigned long long)c.dropped);
  if (not_ipv6 != 0) print_count("l2", "not_ipv6", not_ipv6, " (passed)");
  if (truncated_l2 != 0) print_count("l2", "truncated", truncated_l2, " (dropped)");
  for (size_t i = 0; i < c.decap.size(); ++i) {
    if (c.decap[i] == 0) continue;
    const auto s = srv6::DecapStatus(i);
    print_count("decap", srv6::to_string(s), c.decap[i],
                s == srv6::DecapStatus::ok ? "" : " (dropped)");
  }
  return 0;
}

int run_parse(const Options& o) {
  auto reader = open_input(o.in);
  if (!reader) return kExitIo;
  Counts c;
  while (auto pkt = reader->next()) {
    ++c.frames;
    const std::span<const uint8_t> frame(pkt->data);
    net::PacketInfo info;
    const net::ParseStatus st = net::parse_frame(frame, info);
    ++c.parse[size_t(st)];
    if (st != net::ParseStatus::ok) {
      std::printf("%llu %s\n", (unsigned long long)c.frames, net::to_string(st));
      continue;
    }
    const bool icrc_ok =
        net::roce_icrc_valid(frame.subspan(info.l3_offset, info.l3_len), info.family);
    std::printf(
        "%llu ok family=%s src=%s dst=%s vlans=%u sport=%u qp=%u opcode=%u psn=%u ecn=%u "
        "dscp=%u cnp=%u icrc=%s\n",
        (unsigned long long)c.frames, info.family == net::Family::ipv4 ? "ipv4" : "ipv6",
        net::to_string(info.src).c_str(), net::to_string(info.dst).c_str(),
        unsigned(info.vlan_count), unsigned(info.udp_sport), unsigned(info.bth.dest_qp),
        unsigned(info.bth.opcode), unsigned(info.bth.psn()), unsigned(info.ecn),
        unsigned(info.dscp), unsigned(info.is_cnp), icrc_ok ? "valid" : "bad");
  }
  if (!input_ended_cleanly(*reader, o.in)) return kExitIo;
  std::printf("frames %llu\n", (unsigned long long)c.frames);
  print_parse_counts(c, false);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::string help;
  try {
    o = parse_options(argc, argv, help);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "srv6gw-pcap: %s\n%s", e.message.c_str(), help.c_str());
    return kExitUsage;
  }
  if (o.command == "encap") return run_encap(o);
  if (o.command == "decap") return run_decap(o);
  return run_parse(o);
}
