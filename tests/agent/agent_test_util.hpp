// SPDX-License-Identifier: BSD-3-Clause
// Helpers of the agent tests: a fake StateSink that checks what it is given the way the
// Gateway does (config::validate), request builders, temporary directories.
#pragma once

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>

#include "agent/agent.hpp"
#include "config/model.hpp"
#include "config/validate.hpp"
#include "net/addr.hpp"
#include "srv6gw/v1/srv6gw.grpc.pb.h"

namespace srv6gw::agent::test {

// Records every configuration it is asked to run. Refuses what config::validate() refuses
// (as the Gateway does) and, when `refuse_next` is set, the next apply with that error.
class FakeSink final : public StateSink {
 public:
  std::optional<config::ConfigError> apply(const config::GatewayConfig& cfg) override {
    std::lock_guard lock(mutex);
    ++apply_calls;
    if (refuse_next) {
      auto e = *refuse_next;
      refuse_next.reset();
      return e;
    }
    if (validate) {
      if (auto e = config::validate(cfg)) return e;
    }
    running = cfg;
    return std::nullopt;
  }
  StatsSnapshot stats() override {
    std::lock_guard lock(mutex);
    return stats_value;
  }

  std::mutex mutex;
  config::GatewayConfig running;
  unsigned apply_calls = 0;
  std::optional<config::ConfigError> refuse_next;
  bool validate = true;  // off where only the agent's own cost matters (1M-entry tests)
  StatsSnapshot stats_value;
};

// A whole file's bytes ("" when it cannot be read).
inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline net::Ipv6Addr v6(const char* text) {
  return *net::parse_ipv6(text);
}

// Concatenation by appending (GCC 12 -Wrestrict misfires on "literal" + std::string).
inline std::string cat(std::initializer_list<std::string_view> parts) {
  std::string s;
  for (auto p : parts) s += p;
  return s;
}

// 10.a.b.c from the low 24 bits of n.
inline std::string ipv4_from(uint32_t n) {
  return cat({"10.", std::to_string((n >> 16) & 255), ".", std::to_string((n >> 8) & 255), ".",
              std::to_string(n & 255)});
}

// A small valid configuration: two ports, one policy "base" with one list (path id 1).
inline config::GatewayConfig base_config() {
  config::GatewayConfig cfg;
  cfg.host_port.device = "net_null0";
  cfg.fabric_port.device = "net_null1";
  cfg.source = v6("fc00:0:1::1");
  config::Policy p;
  p.name = "base";
  config::SegmentList sl;
  sl.name = "only";
  sl.path_id = 1;
  sl.sids = {v6("fc00:0:101::e"), v6("fc00:0:2::d4")};
  p.segment_lists.push_back(sl);
  cfg.policies.push_back(p);
  return cfg;
}

// base_config() as two rails: r0 (net_null0/1) and r1 (net_null2/3, its own source, a SID).
inline config::GatewayConfig two_rails_config() {
  config::GatewayConfig cfg = base_config();
  config::Rail r0, r1;
  r0.name = "r0";
  r0.host_port.device = cfg.host_port.device;
  r0.fabric_port.device = cfg.fabric_port.device;
  r1.name = "r1";
  r1.host_port.device = "net_null2";
  r1.fabric_port.device = "net_null3";
  r1.source = v6("fc00:0:9::1");
  r1.local_sids = {{v6("fc00:0:9::d46"), srv6::LocalSidBehavior::end_dt46}};
  r0.host_port.lossless.enabled = r1.host_port.lossless.enabled = true;  // ports/lossless
  r0.fabric_port.lossless = r0.host_port.lossless;
  r1.fabric_port.lossless = r1.host_port.lossless;
  cfg.host_port.lossless = cfg.fabric_port.lossless = r0.host_port.lossless;
  cfg.host_port.device.clear();
  cfg.fabric_port.device.clear();
  cfg.rails = {r0, r1};
  return cfg;
}

// A policy with `lists` segment lists of two SIDs each, path ids first_path_id...
inline v1::SrPolicy make_policy(const std::string& name, uint32_t first_path_id, int lists = 2) {
  v1::SrPolicy p;
  p.set_name(name);
  p.set_color(7);
  p.set_endpoint("fc00:0:2::1");
  p.mutable_selection()->set_mode(v1::SELECTION_MODE_PACKET);
  for (int i = 0; i < lists; ++i) {
    auto* sl = p.add_segment_lists();
    sl->set_name(cat({"sl", std::to_string(i)}));
    sl->set_path_id(first_path_id + uint32_t(i));
    sl->set_weight(uint32_t(i + 1));
    sl->add_sids(cat({"fc00:0:1", std::to_string(i), "::e"}));
    sl->add_sids("fc00:0:2::d4");
  }
  return p;
}

inline v1::SteeringRule exact_rule(uint32_t id, const std::string& dst, uint32_t qp,
                                   const std::string& policy) {
  v1::SteeringRule r;
  r.set_id(id);
  r.mutable_exact()->set_destination(dst);
  r.mutable_exact()->set_dest_qp(qp);
  r.set_policy(policy);
  return r;
}

// A fresh directory under /tmp (short: unix socket paths are limited to 107 bytes).
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/srv6gw-agent-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline std::unique_ptr<v1::Gateway::Stub> unix_stub(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  return v1::Gateway::NewStub(
      grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args));
}

}  // namespace srv6gw::agent::test
