// SPDX-License-Identifier: BSD-3-Clause
#include "roce-gen/closed_loop.hpp"

#include <algorithm>
#include <cstring>

#include "net/headers.hpp"

namespace srv6gw::rocegen {

namespace {

constexpr uint32_t kPsnMask = 0xffffff;
constexpr uint8_t kOpAck = 0x11;
constexpr uint8_t kSyndromeMask = 0xe0;
constexpr uint8_t kSyndromeAck = 0x00;
constexpr uint8_t kSyndromeNak = 0x60;  // NAK: PSN sequence error

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

std::optional<ClosedLoopSender> ClosedLoopSender::create(const ClosedLoopSpec& spec,
                                                         std::string& error) {
  const uint32_t n = uint32_t(spec.ranks.size());
  if (n < 2) {
    error = "ranks: at least 2 addresses";
    return std::nullopt;
  }
  if (spec.rank >= n) {
    error = "rank: " + std::to_string(spec.rank) + " is not below the number of ranks " +
            std::to_string(n);
    return std::nullopt;
  }
  if (spec.qps_per_peer == 0 || spec.qps_per_peer > 256) {
    error = "qps-per-peer: must be 1..256";
    return std::nullopt;
  }
  if (spec.iterations == 0) {
    error = "iterations: must be at least 1";
    return std::nullopt;
  }
  if (spec.window_packets == 0 || spec.ack_every == 0) {
    error = "window / ack-every: must be positive";
    return std::nullopt;
  }
  if (spec.dest_qp_base + uint64_t(n) * spec.qps_per_peer > kPsnMask) {
    error = "dest-qp-base: QP numbers run past 24 bits";
    return std::nullopt;
  }
  if (const char* bad = spec.dcqcn_params.invalid_field()) {
    error = std::string("dcqcn: ") + bad;
    return std::nullopt;
  }
  const uint64_t per_qp = spec.bytes / n / spec.qps_per_peer;
  if (per_qp < 4) {
    error = "bytes: " + std::to_string(spec.bytes) + " leaves less than 4 bytes per QP message";
    return std::nullopt;
  }
  ClosedLoopSender s;
  s.spec_ = spec;
  FlowAddress flow;
  flow.src_mac = spec.src_mac;
  flow.dst_mac = spec.dst_mac;
  flow.src = net::IpAddr::v4(spec.ranks[spec.rank]);
  flow.dscp = spec.dscp;
  flow.ecn = spec.ecn;
  flow.dst = net::IpAddr::v4(spec.ranks[(spec.rank + 1) % n]);
  s.payload_per_packet_ = payload_len_for(spec.frame_len, flow, Opcode::write_middle);
  if (s.payload_per_packet_ < 4) {
    error = "size: " + std::to_string(spec.frame_len) + " leaves no room for data";
    return std::nullopt;
  }
  for (uint32_t peer = 0; peer < n; ++peer) {
    for (uint32_t i = 0; i < spec.qps_per_peer; ++i) {
      Qp q;
      q.peer = peer;
      q.dest_qp = spec.dest_qp_base + peer * spec.qps_per_peer + i;
      q.flow = flow;
      q.flow.dst = net::IpAddr::v4(spec.ranks[peer]);
      q.flow.udp_sport = uint16_t(
          0xc000 | (splitmix(spec.seed ^ (uint64_t(spec.rank) << 40) ^ q.dest_qp) & 0x3fff));
      q.next_va = splitmix(spec.seed + q.dest_qp) & 0xffffffff000ull;
      s.qps_.push_back(std::move(q));
    }
  }
  const uint64_t chunk = spec.bytes / n;
  if (spec.collective == Collective::alltoall) {
    // NCCL's order: rank + 1, rank + 2, ... (all at once; the order sets the QPs' start).
    std::vector<std::pair<uint32_t, uint64_t>> all;
    for (uint32_t k = 1; k < n; ++k) all.emplace_back((spec.rank + k) % n, chunk);
    s.phase_plan_.push_back(std::move(all));
  } else {
    // Ring AllReduce: N-1 reduce-scatter steps and N-1 all-gather steps, each a chunk of
    // bytes/N to the next rank.
    for (uint32_t step = 0; step < 2 * (n - 1); ++step) {
      s.phase_plan_.push_back({{(spec.rank + 1) % n, chunk}});
    }
  }
  return s;
}

void ClosedLoopSender::start_phase(uint64_t now_ns) {
  if (finished() || started_) return;
  const uint32_t q_per = spec_.qps_per_peer;
  active_qps_ = 0;
  for (const auto& [peer, bytes] : phase_plan_[phase_ % phases_per_iteration()]) {
    const uint64_t per_qp = (bytes / q_per) & ~uint64_t(3);
    for (uint32_t i = 0; i < q_per; ++i) {
      Qp& q = qps_[peer * q_per + i];
      if (!q.rp && spec_.dcqcn) q.rp.emplace(spec_.dcqcn_params, now_ns);
      Message m;
      m.first_psn = q.end;
      m.bytes = per_qp;
      m.packets = uint32_t((per_qp + payload_per_packet_ - 1) / payload_per_packet_);
      m.va = q.next_va;
      q.next_va += per_qp;
      q.end += m.packets;
      q.messages.push_back(m);
      ++active_qps_;
    }
  }
  timings_.push_back({now_ns, 0});
  started_ = true;
}

bool ClosedLoopSender::phase_done(uint64_t now_ns) {
  if (!started_) return false;
  for (const Qp& q : qps_) {
    if (q.una < q.end) return false;
  }
  if (timings_.back().done_ns == 0) timings_.back().done_ns = now_ns;
  return true;
}

double ClosedLoopSender::qp_rate(const Qp& q) const {
  return q.rp ? q.rp->rate_bps() : spec_.dcqcn_params.line_rate_bps;
}

size_t ClosedLoopSender::next_frame(uint64_t now_ns, std::span<uint8_t> out) {
  if (!started_ || now_ns < nic_next_ns_) return 0;
  const size_t n = qps_.size();
  for (size_t k = 0; k < n; ++k) {
    const size_t i = (rr_ + k) % n;
    Qp& q = qps_[i];
    if (q.nxt >= q.end || q.nxt - q.una >= spec_.window_packets || now_ns < q.next_send_ns) {
      continue;
    }
    const uint64_t v = q.nxt;
    const Message* m = nullptr;
    for (const Message& cand : q.messages) {
      if (v >= cand.first_psn && v < cand.first_psn + cand.packets) {
        m = &cand;
        break;
      }
    }
    if (m == nullptr) continue;  // cannot happen: [una, end) is covered by queued messages
    const uint64_t idx = v - m->first_psn;
    const bool last = idx + 1 == m->packets;
    RoceFields f;
    f.opcode = m->packets == 1 ? Opcode::write_only
               : idx == 0      ? Opcode::write_first
               : last          ? Opcode::write_last
                               : Opcode::write_middle;
    f.dest_qp = q.dest_qp;
    f.psn = uint32_t(v & kPsnMask);
    f.ack_req = last || (v + 1) % spec_.ack_every == 0;
    f.payload_len = last ? uint32_t(m->bytes - idx * payload_per_packet_) : payload_per_packet_;
    f.payload_seed = v;
    f.reth.virtual_address = m->va;
    f.reth.r_key = 0x1000 + q.dest_qp;
    f.reth.dma_length = uint32_t(m->bytes);
    ++q.flow.ip_id;
    const size_t len = build_roce_frame(q.flow, f, out);
    if (len == 0) return 0;
    rr_ = i + 1;
    if (q.nxt == q.una) q.last_progress_ns = now_ns;  // the retransmission timer starts
    if (v < q.max_sent) ++counters_.retransmitted;
    ++q.nxt;
    q.max_sent = std::max(q.max_sent, q.nxt);
    const double bits = double(len) * 8;
    const uint64_t floor_ns = now_ns > spec_.pacing_slack_ns ? now_ns - spec_.pacing_slack_ns : 0;
    q.next_send_ns = std::max(q.next_send_ns, floor_ns) + uint64_t(bits * 1e9 / qp_rate(q));
    nic_next_ns_ =
        std::max(nic_next_ns_, floor_ns) + uint64_t(bits * 1e9 / spec_.dcqcn_params.line_rate_bps);
    if (q.rp) q.rp->on_sent(len, now_ns);
    ++counters_.data_packets;
    counters_.data_bytes += len;
    return len;
  }
  return 0;
}

uint64_t ClosedLoopSender::virtual_psn(const Qp& q, uint32_t wire) const {
  const uint32_t delta = (wire - uint32_t(q.una & kPsnMask)) & kPsnMask;
  if (delta >= 0x800000) return UINT64_MAX;  // behind the oldest unacknowledged: stale
  const uint64_t v = q.una + delta;
  return v <= q.max_sent ? v : UINT64_MAX;
}

void ClosedLoopSender::acknowledge(Qp& q, uint64_t up_to_excl) {
  if (up_to_excl <= q.una) return;
  q.una = up_to_excl;
  if (q.nxt < q.una) q.nxt = q.una;
  while (!q.messages.empty() &&
         q.messages.front().first_psn + q.messages.front().packets <= q.una) {
    ++counters_.messages_done;
    counters_.bytes_done += q.messages.front().bytes;
    q.messages.pop_front();
  }
}

bool ClosedLoopSender::on_frame(std::span<const uint8_t> f, uint64_t now_ns) {
  size_t l3 = 14;
  if (f.size() < 18) return false;
  uint16_t type = uint16_t(f[12] << 8 | f[13]);
  if (type == 0x8100) {
    type = uint16_t(f[16] << 8 | f[17]);
    l3 = 18;
  }
  if (type != 0x0800 || f.size() < l3 + 20 || (f[l3] >> 4) != 4 || f[l3 + 9] != 17) {
    ++counters_.ignored_frames;
    return false;
  }
  const size_t udp = l3 + size_t(f[l3] & 0xf) * 4;
  if (f.size() < udp + 8 + 12 + 4 || f[udp + 2] != 0x12 || f[udp + 3] != 0xb7) {
    ++counters_.ignored_frames;
    return false;
  }
  const uint8_t* bth = f.data() + udp + 8;
  const uint8_t opcode = bth[0];
  const uint32_t dest_qp = uint32_t(bth[5]) << 16 | uint32_t(bth[6]) << 8 | bth[7];
  net::Ipv4Addr src{};
  std::memcpy(src.bytes.data(), f.data() + l3 + 12, 4);
  const uint64_t idx = uint64_t(dest_qp) - spec_.dest_qp_base;
  if ((opcode != kOpAck && opcode != net::kBthOpcodeCnp) || dest_qp < spec_.dest_qp_base ||
      idx >= qps_.size() || qps_[idx].peer == spec_.rank ||
      spec_.ranks[qps_[idx].peer].bytes != src.bytes) {
    ++counters_.ignored_frames;
    return false;
  }
  Qp& q = qps_[idx];
  if (opcode == net::kBthOpcodeCnp) {
    ++counters_.cnps;
    if (q.rp) {
      const uint64_t cuts = q.rp->counters().rate_cuts;
      q.rp->on_cnp(now_ns);
      counters_.rate_cuts += q.rp->counters().rate_cuts - cuts;
    }
    return true;
  }
  if (f.size() < udp + 8 + 12 + 4 + 4) return false;
  const uint8_t syndrome = bth[12];
  const uint32_t psn = uint32_t(bth[9]) << 16 | uint32_t(bth[10]) << 8 | bth[11];
  const uint64_t v = virtual_psn(q, psn);
  if ((syndrome & kSyndromeMask) == kSyndromeAck) {
    ++counters_.acks;
    if (v != UINT64_MAX && v + 1 > q.una) {
      acknowledge(q, v + 1);
      q.last_progress_ns = now_ns;
    }
  } else if ((syndrome & kSyndromeMask) == kSyndromeNak) {
    // PSN sequence error: everything before `psn` arrived; go back to it.
    ++counters_.naks;
    if (v != UINT64_MAX) {
      acknowledge(q, v);
      if (v < q.nxt) {
        q.nxt = v;
        ++counters_.nak_go_backs;
      }
      q.last_progress_ns = now_ns;
    }
  }
  return true;
}

void ClosedLoopSender::poll(uint64_t now_ns) {
  for (Qp& q : qps_) {
    if (q.rp) q.rp->advance(now_ns);
    if (q.una < q.nxt && now_ns - q.last_progress_ns >= spec_.rto_ns) {
      q.nxt = q.una;  // go back N from the oldest unacknowledged
      ++counters_.timeouts;
      q.last_progress_ns = now_ns;
    }
  }
}

uint64_t ClosedLoopSender::next_event_ns(uint64_t now_ns) const {
  uint64_t next = now_ns + 1'000'000;  // look again within a millisecond in any case
  for (const Qp& q : qps_) {
    if (q.nxt < q.end && q.nxt - q.una < spec_.window_packets) {
      next = std::min(next, std::max(q.next_send_ns, nic_next_ns_));
    }
    if (q.una < q.nxt) next = std::min(next, q.last_progress_ns + spec_.rto_ns);
  }
  return next;
}

std::vector<ClosedLoopSender::QpView> ClosedLoopSender::qp_views() const {
  std::vector<QpView> out;
  for (const Qp& q : qps_) {
    if (q.peer == spec_.rank) continue;
    out.push_back({q.peer, q.dest_qp, qp_rate(q), q.rp ? q.rp->alpha() : 0.0,
                   q.rp ? q.rp->counters().cnps : 0});
  }
  return out;
}

}  // namespace srv6gw::rocegen
