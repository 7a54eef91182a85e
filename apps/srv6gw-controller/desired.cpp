// SPDX-License-Identifier: BSD-3-Clause
#include "desired.hpp"

#include <arpa/inet.h>

#include "config/model.hpp"

#include <google/protobuf/util/message_differencer.h>

#include <cstdlib>

namespace srv6gw::sr_controller {
namespace {

using google::protobuf::util::MessageDifferencer;

// Canonical text of an IPv4 or IPv6 address (RFC 5952 for IPv6, as inet_ntop and the
// gateway's net::to_string write it); unchanged when it is not one.
std::string canonical_address(const std::string& text) {
  unsigned char buf[16];
  char out[INET6_ADDRSTRLEN];
  if (inet_pton(AF_INET6, text.c_str(), buf) == 1) {
    return inet_ntop(AF_INET6, buf, out, sizeof out) ? std::string(out) : text;
  }
  if (inet_pton(AF_INET, text.c_str(), buf) == 1) {
    return inet_ntop(AF_INET, buf, out, sizeof out) ? std::string(out) : text;
  }
  return text;
}

// "10.1.2.3/16" -> "10.1.0.0/16": the gateway stores the network (host bits cleared).
std::string canonical_prefix(const std::string& text) {
  auto slash = text.find('/');
  if (slash == std::string::npos) return text;
  std::string addr = text.substr(0, slash);
  char* end = nullptr;
  long len = std::strtol(text.c_str() + slash + 1, &end, 10);
  if (end == text.c_str() + slash + 1 || *end != '\0') return text;
  unsigned char buf[16];
  char out[INET6_ADDRSTRLEN];
  int family = inet_pton(AF_INET6, addr.c_str(), buf) == 1  ? AF_INET6
               : inet_pton(AF_INET, addr.c_str(), buf) == 1 ? AF_INET
                                                            : 0;
  if (family == 0) return text;
  const long bits = family == AF_INET6 ? 128 : 32;
  if (len < 0 || len > bits) return text;
  for (long b = len; b < bits; ++b) buf[b / 8] &= uint8_t(~(0x80u >> (b % 8)));
  if (!inet_ntop(family, buf, out, sizeof out)) return text;
  return std::string(out) + "/" + std::to_string(len);
}

}  // namespace

void normalize(v1::SrPolicy& p) {
  if (!p.endpoint().empty()) p.set_endpoint(canonical_address(p.endpoint()));
  if (!p.source_address().empty()) p.set_source_address(canonical_address(p.source_address()));
  if (!p.probe_sid().empty()) p.set_probe_sid(canonical_address(p.probe_sid()));
  if (p.encap() == v1::ENCAP_MODE_UNSPECIFIED) p.set_encap(v1::ENCAP_MODE_ENCAPS);
  auto* f = p.mutable_usid_format();
  if (f->block_bits() == 0) f->set_block_bits(32);
  if (f->usid_bits() == 0) f->set_usid_bits(16);
  auto* sel = p.mutable_selection();
  if (sel->mode() == v1::SELECTION_MODE_UNSPECIFIED) sel->set_mode(v1::SELECTION_MODE_FLOW);
  // Unset gaps read back as the gateway's defaults: compare them as such, or every read
  // would differ from the plan and the policy be pushed again forever.
  const config::Policy defaults;
  if (!sel->has_flowlet_gap_us()) sel->set_flowlet_gap_us(defaults.flowlet_gap_us);
  if (!sel->has_idle_gap_us()) sel->set_idle_gap_us(defaults.idle_gap_us);
  for (auto& sl : *p.mutable_segment_lists()) {
    if (!sl.has_weight()) sl.set_weight(1);
    for (auto& sid : *sl.mutable_sids()) sid = canonical_address(sid);
  }
}

void normalize(v1::SteeringRule& r) {
  switch (r.match_case()) {
    case v1::SteeringRule::kExact:
      r.mutable_exact()->set_destination(canonical_address(r.exact().destination()));
      break;
    case v1::SteeringRule::kDestination:
      r.set_destination(canonical_address(r.destination()));
      break;
    case v1::SteeringRule::kQpRange:
      if (!r.qp_range().destination().empty()) {
        r.mutable_qp_range()->set_destination(canonical_address(r.qp_range().destination()));
      }
      break;
    case v1::SteeringRule::kPrefix:
      r.set_prefix(canonical_prefix(r.prefix()));
      break;
    case v1::SteeringRule::MATCH_NOT_SET:
      break;
  }
}

void normalize(v1::LocalSid& s) {
  s.set_sid(canonical_address(s.sid()));
  if (s.behavior() == v1::LOCAL_SID_BEHAVIOR_UNSPECIFIED) {
    s.set_behavior(v1::LOCAL_SID_BEHAVIOR_END_DT46);
  }
}

void GatewayState::add(v1::SrPolicy p) {
  normalize(p);
  std::string key = p.name();
  policies[key] = std::move(p);
}

void GatewayState::add(v1::SteeringRule r) {
  normalize(r);
  uint32_t key = r.id();
  steering[key] = std::move(r);
}

void GatewayState::add(v1::LocalSid s) {
  normalize(s);
  std::string key = s.sid();
  local_sids[key] = std::move(s);
}

namespace {

template <class Map>
bool same_objects(const Map& a, const Map& b) {
  if (a.size() != b.size()) return false;
  for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
    if (ia->first != ib->first || !MessageDifferencer::Equals(ia->second, ib->second)) {
      return false;
    }
  }
  return true;
}

// Upserts of objects new or changed in `desired`, then the keys `running` has beyond it.
template <class Map, class Upsert, class Delete>
void diff_map(const Map& desired, const Map& running, std::vector<v1::Change>& upserts,
              std::vector<v1::Change>& deletes, Upsert upsert, Delete del) {
  for (const auto& [key, obj] : desired) {
    auto it = running.find(key);
    if (it == running.end() || !MessageDifferencer::Equals(it->second, obj)) {
      upsert(upserts.emplace_back(), obj);
    }
  }
  for (const auto& [key, obj] : running) {
    if (!desired.count(key)) del(deletes.emplace_back(), key);
  }
}

}  // namespace

bool GatewayState::operator==(const GatewayState& o) const {
  return same_objects(policies, o.policies) && same_objects(steering, o.steering) &&
         same_objects(local_sids, o.local_sids);
}

std::vector<v1::Change> diff(const GatewayState& desired, const GatewayState& running) {
  std::vector<v1::Change> sid_up, sid_del, pol_up, pol_del, rule_up, rule_del;
  diff_map(
      desired.local_sids, running.local_sids, sid_up, sid_del,
      [](v1::Change& c, const v1::LocalSid& s) { *c.mutable_upsert_local_sid() = s; },
      [](v1::Change& c, const std::string& k) { c.set_delete_local_sid(k); });
  diff_map(
      desired.policies, running.policies, pol_up, pol_del,
      [](v1::Change& c, const v1::SrPolicy& p) { *c.mutable_upsert_policy() = p; },
      [](v1::Change& c, const std::string& k) { c.set_delete_policy(k); });
  diff_map(
      desired.steering, running.steering, rule_up, rule_del,
      [](v1::Change& c, const v1::SteeringRule& r) { *c.mutable_upsert_steering() = r; },
      [](v1::Change& c, uint32_t k) { c.set_delete_steering(k); });
  std::vector<v1::Change> out;
  out.reserve(sid_up.size() + sid_del.size() + pol_up.size() + pol_del.size() + rule_up.size() +
              rule_del.size());
  for (auto* part : {&sid_up, &pol_up, &rule_up, &rule_del, &pol_del, &sid_del}) {
    for (auto& c : *part) out.push_back(std::move(c));
  }
  return out;
}

DiffCounts count(const std::vector<v1::Change>& changes) {
  DiffCounts n;
  for (const auto& c : changes) {
    switch (c.change_case()) {
      case v1::Change::kUpsertPolicy:
      case v1::Change::kUpsertSteering:
      case v1::Change::kUpsertLocalSid:
        ++n.upserts;
        break;
      default:
        ++n.deletes;
        break;
    }
  }
  return n;
}

}  // namespace srv6gw::sr_controller
