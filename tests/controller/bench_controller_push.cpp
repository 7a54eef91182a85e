// SPDX-License-Identifier: BSD-3-Clause
// How long the controller's reconciler takes to bring N emulated gateways to a plan: one
// gRPC server on one unix socket plays every gateway (told apart by the request authority,
// which the controller sets to the gateway's name), keeps each one's objects and generation,
// honours expected_generation, and neither validates nor persists (a real gateway adds its
// own validate + fsync, ~40 ms on the test VM: docs/design/controller.md). Measures (a) the first
// push of a full plan to every gateway and (b) a failure's recomputation: a few policies per
// gateway get one list at weight 0. Usage: bench-controller-push [GATEWAYS [POLICIES]]
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>

#include <spdlog/spdlog.h>

#include "reconciler.hpp"

namespace {

using namespace srv6gw;
using namespace srv6gw::sr_controller;
using namespace std::chrono_literals;

class EmulatedGateways final : public v1::Gateway::Service {
 public:
  struct One {
    std::mutex mutex;
    uint64_t generation = 0;
    GatewayState objects;
  };
  One& of(grpc::ServerContext* ctx) {
    const auto authority = ctx->ExperimentalGetAuthority();
    std::string name(authority.data(), authority.size());
    std::lock_guard lock(mutex_);
    auto& p = gws_[name];
    if (!p) p = std::make_unique<One>();
    return *p;
  }
  grpc::Status GetState(grpc::ServerContext* ctx, const v1::GetStateRequest*,
                        v1::GetStateResponse* resp) override {
    auto& g = of(ctx);
    std::lock_guard lock(g.mutex);
    resp->set_generation(g.generation);
    return grpc::Status::OK;
  }
  grpc::Status ListPolicies(grpc::ServerContext* ctx, const v1::ListPoliciesRequest*,
                            v1::ListPoliciesResponse* resp) override {
    auto& g = of(ctx);
    std::lock_guard lock(g.mutex);
    for (auto& [_, p] : g.objects.policies) *resp->add_policies() = p;
    resp->set_generation(g.generation);
    return grpc::Status::OK;
  }
  grpc::Status ListSteering(grpc::ServerContext* ctx, const v1::ListSteeringRequest*,
                            v1::ListSteeringResponse* resp) override {
    auto& g = of(ctx);
    std::lock_guard lock(g.mutex);
    for (auto& [_, r] : g.objects.steering) *resp->add_rules() = r;
    resp->set_generation(g.generation);
    return grpc::Status::OK;
  }
  grpc::Status ListLocalSids(grpc::ServerContext* ctx, const v1::ListLocalSidsRequest*,
                             v1::ListLocalSidsResponse* resp) override {
    auto& g = of(ctx);
    std::lock_guard lock(g.mutex);
    for (auto& [_, s] : g.objects.local_sids) *resp->add_local_sids() = s;
    resp->set_generation(g.generation);
    return grpc::Status::OK;
  }
  grpc::Status Apply(grpc::ServerContext* ctx, const v1::ApplyRequest* req,
                     v1::ApplyResponse* resp) override {
    auto& g = of(ctx);
    std::lock_guard lock(g.mutex);
    if (req->has_expected_generation() && req->expected_generation() != g.generation) {
      return {grpc::StatusCode::FAILED_PRECONDITION, "stale generation"};
    }
    for (const auto& c : req->changes()) {
      switch (c.change_case()) {
        case v1::Change::kUpsertPolicy:
          g.objects.add(c.upsert_policy());
          break;
        case v1::Change::kDeletePolicy:
          g.objects.policies.erase(c.delete_policy());
          break;
        case v1::Change::kUpsertSteering:
          g.objects.add(c.upsert_steering());
          break;
        case v1::Change::kDeleteSteering:
          g.objects.steering.erase(c.delete_steering());
          break;
        case v1::Change::kUpsertLocalSid:
          g.objects.add(c.upsert_local_sid());
          break;
        case v1::Change::kDeleteLocalSid:
          g.objects.local_sids.erase(c.delete_local_sid());
          break;
        default:
          break;
      }
    }
    resp->set_generation(++g.generation);
    return grpc::Status::OK;
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<One>> gws_;
};

// Concatenation by appending (GCC 12 -Wrestrict misfires on "literal" + std::string).
std::string num(const char* prefix, unsigned n) {
  std::string s = prefix;
  s += std::to_string(n);
  return s;
}

std::string gw_name(unsigned concurrency, unsigned g) {
  std::string s = num("c", concurrency);
  s += num("-g", g);
  return s;
}

// Gateway g's plan: `policies` policies of 4 lists each, a rule per policy, 2 local SIDs.
// `down_spine` > 0: the lists over that spine at weight 0 in the first quarter of policies.
std::shared_ptr<GatewayState> plan_of(unsigned g, unsigned policies, unsigned down_spine) {
  auto s = std::make_shared<GatewayState>();
  char buf[64];
  for (unsigned p = 0; p < policies; ++p) {
    v1::SrPolicy pol;
    pol.set_name(num("to-h", p));
    for (unsigned l = 1; l <= 4; ++l) {
      auto* sl = pol.add_segment_lists();
      sl->set_name(num("s", l));
      sl->set_path_id(p * 4 + l);
      sl->set_weight(down_spine == l && p < policies / 4 ? 0 : 1);
      std::snprintf(buf, sizeof buf, "fc00:0:%x::e", 0x100 + l);
      sl->add_sids(buf);
      std::snprintf(buf, sizeof buf, "fc00:0:%x::d46", 0x1000 + p);
      sl->add_sids(buf);
    }
    s->add(std::move(pol));
    v1::SteeringRule r;
    r.set_id(p + 1);
    std::snprintf(buf, sizeof buf, "10.0.%u.%u", p / 256, p % 256);
    r.set_destination(buf);
    r.set_policy(num("to-h", p));
    s->add(std::move(r));
  }
  for (unsigned k = 0; k < 2; ++k) {
    v1::LocalSid l;
    std::snprintf(buf, sizeof buf, "fc00:0:%x::%s", 0x1000 + g, k ? "f" : "d46");
    l.set_sid(buf);
    l.set_behavior(k ? v1::LOCAL_SID_BEHAVIOR_END_PROBE : v1::LOCAL_SID_BEHAVIOR_END_DT46);
    s->add(std::move(l));
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_level(spdlog::level::warn);  // one line per push otherwise
  const unsigned n = argc > 1 ? unsigned(std::stoul(argv[1])) : 1024;
  const unsigned policies = argc > 2 ? unsigned(std::stoul(argv[2])) : 64;
  char tmpl[] = "/tmp/srv6gw-bench-ctl-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  const std::string sock = dir + "/gateways.sock";
  EmulatedGateways service;
  grpc::ServerBuilder b;
  b.AddListeningPort("unix:" + sock, grpc::InsecureServerCredentials());
  b.RegisterService(&service);
  b.SetMaxReceiveMessageSize(-1);
  auto server = b.BuildAndStart();
  if (!server) {
    std::fprintf(stderr, "cannot listen on %s\n", sock.c_str());
    return 1;
  }
  std::printf("%u emulated gateways, %u policies (4 lists) + %u rules + 2 local SIDs each\n", n,
              policies, policies);
  for (unsigned concurrency : {8u, 32u}) {
    ReconcilerOptions o;
    o.concurrency = concurrency;
    o.resync = 0ms;
    Reconciler r(o, nullptr);
    for (unsigned g = 0; g < n; ++g) {
      cv1::GatewayEndpoint ep;
      ep.set_name(gw_name(concurrency, g));
      ep.set_target(std::string("unix:").append(sock));
      std::string err;
      r.add_gateway(ep.name(), make_channel(ep, err));
    }
    auto t0 = std::chrono::steady_clock::now();
    for (unsigned g = 0; g < n; ++g) {
      r.set_desired(gw_name(concurrency, g), plan_of(g, policies, 0), 1);
    }
    if (!r.wait_synced(1, 600s)) return 1;
    const double first =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    t0 = std::chrono::steady_clock::now();
    for (unsigned g = 0; g < n; ++g) {
      r.set_desired(gw_name(concurrency, g), plan_of(g, policies, 1), 2);
    }
    if (!r.wait_synced(2, 600s)) return 1;
    const double failure =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    uint64_t changes = 0;
    for (const auto& rep : r.report()) changes += rep.changes_pushed;
    std::printf(
        "concurrency %2u: first plan to all %u gateways %.0f ms (%.2f ms/gateway); failure "
        "recomputation (%u policies changed per gateway) to all %.0f ms (%.3f ms/gateway); "
        "%lu changes pushed\n",
        concurrency, n, first, first / n, policies / 4, failure, failure / n,
        (unsigned long)changes);
    r.stop();
  }
  server->Shutdown();
  std::filesystem::remove_all(dir);
  return 0;
}
