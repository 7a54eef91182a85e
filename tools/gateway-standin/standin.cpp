// SPDX-License-Identifier: BSD-3-Clause
// srv6gw-gateway-standin: a cheap stand-in for many srv6gw gateways' agents in one process,
// for the controller's fan-out benchmark (docs/design/controller.md; controller-ha runs real srv6gw
// daemons). One gRPC server on one unix socket plays every gateway, told apart by the request
// authority (the controller sets it to the gateway's name on unix targets). Per gateway it keeps
// the managed objects and the generation, and enforces Apply's expected_generation exactly as the
// real agent does (lib/agent/state_keeper.cpp: refused FAILED_PRECONDITION unless it is the running
// generation; a refused batch changes nothing; a batch applies whole). No data plane, no
// validation, no persistence.
//
// It also records which controller leader pushed what (gRPC metadata srv6gw-controller-term
// and srv6gw-plan-version): a push accepted from an older term after a newer term's push is a
// conflict (a deposed leader overwrote the new one); the test asserts there are none.
//
//   srv6gw-gateway-standin --listen unix:PATH [--summary FILE] [--apply-delay-ms N]
//                          [--slow GATEWAY]...
// SIGUSR1 writes the summary (JSON) to FILE; SIGTERM writes it and exits.
#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "desired.hpp"
#include "srv6gw/v1/srv6gw.grpc.pb.h"

namespace {

using namespace srv6gw;
using namespace srv6gw::sr_controller;

uint64_t meta_number(grpc::ServerContext* ctx, const char* key) {
  const auto& md = ctx->client_metadata();
  auto it = md.find(key);
  if (it == md.end()) return 0;
  try {
    return std::stoull(std::string(it->second.data(), it->second.size()));
  } catch (...) {
    return 0;
  }
}

std::string to_json(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  o.always_print_primitive_fields = true;  // as srv6gw-controller ctl plan prints them
  (void)google::protobuf::util::MessageToJsonString(m, &out, o);
  return out;
}

std::string quoted(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o + "\"";
}

class Gateways final : public v1::Gateway::Service {
 public:
  struct One {
    std::mutex mutex;
    uint64_t generation = 0;
    GatewayState objects;
    uint64_t max_term = 0;   // newest leader term whose push was accepted
    uint64_t last_plan = 0;  // plan version of the last accepted push
    uint64_t accepted = 0, refused_stale = 0, refused_late = 0, conflicts = 0;
    std::set<uint64_t> terms;  // every term that pushed successfully
  };
  std::chrono::milliseconds apply_delay{0};
  std::set<std::string> slow;  // gateways that take apply_delay per Apply (none: all)

  std::pair<std::string, One*> of(grpc::ServerContext* ctx) {
    const auto authority = ctx->ExperimentalGetAuthority();
    std::string name(authority.data(), authority.size());
    std::lock_guard lock(mutex_);
    auto& p = gws_[name];
    if (!p) p = std::make_unique<One>();
    return {name, p.get()};
  }
  grpc::Status GetState(grpc::ServerContext* ctx, const v1::GetStateRequest*,
                        v1::GetStateResponse* resp) override {
    auto [_, g] = of(ctx);
    std::lock_guard lock(g->mutex);
    resp->set_generation(g->generation);
    return grpc::Status::OK;
  }
  grpc::Status ListPolicies(grpc::ServerContext* ctx, const v1::ListPoliciesRequest*,
                            v1::ListPoliciesResponse* resp) override {
    auto [_, g] = of(ctx);
    std::lock_guard lock(g->mutex);
    for (auto& [_, p] : g->objects.policies) *resp->add_policies() = p;
    resp->set_generation(g->generation);
    return grpc::Status::OK;
  }
  grpc::Status ListSteering(grpc::ServerContext* ctx, const v1::ListSteeringRequest*,
                            v1::ListSteeringResponse* resp) override {
    auto [_, g] = of(ctx);
    std::lock_guard lock(g->mutex);
    for (auto& [_, r] : g->objects.steering) *resp->add_rules() = r;
    resp->set_generation(g->generation);
    return grpc::Status::OK;
  }
  grpc::Status ListLocalSids(grpc::ServerContext* ctx, const v1::ListLocalSidsRequest*,
                             v1::ListLocalSidsResponse* resp) override {
    auto [_, g] = of(ctx);
    std::lock_guard lock(g->mutex);
    for (auto& [_, s] : g->objects.local_sids) *resp->add_local_sids() = s;
    resp->set_generation(g->generation);
    return grpc::Status::OK;
  }
  grpc::Status Apply(grpc::ServerContext* ctx, const v1::ApplyRequest* req,
                     v1::ApplyResponse* resp) override {
    auto [name, g] = of(ctx);
    if (apply_delay.count() > 0 && (slow.empty() || slow.count(name))) {
      std::this_thread::sleep_for(apply_delay);
    }
    const uint64_t term = meta_number(ctx, "srv6gw-controller-term");
    const uint64_t plan = meta_number(ctx, "srv6gw-plan-version");
    std::lock_guard lock(g->mutex);
    if (req->has_expected_generation() && req->expected_generation() != g->generation) {
      ++g->refused_stale;
      if (term < g->max_term) {
        ++g->refused_late;
        std::fprintf(stderr,
                     "standin: gateway %s: refused a late push of term %lu (plan %lu): "
                     "expected generation %lu, running %lu (term %lu)\n",
                     name.c_str(), (unsigned long)term, (unsigned long)plan,
                     (unsigned long)req->expected_generation(), (unsigned long)g->generation,
                     (unsigned long)g->max_term);
      }
      return {grpc::StatusCode::FAILED_PRECONDITION,
              "stale generation: expected_generation is " +
                  std::to_string(req->expected_generation()) + ", running generation is " +
                  std::to_string(g->generation)};
    }
    // Deletes of absent objects are refused whole, as the agent does (NOT_FOUND).
    for (const auto& c : req->changes()) {
      const bool missing =
          (c.has_delete_policy() && !g->objects.policies.count(c.delete_policy())) ||
          (c.has_delete_steering() && !g->objects.steering.count(c.delete_steering())) ||
          (c.has_delete_local_sid() && !g->objects.local_sids.count(c.delete_local_sid()));
      if (missing) return {grpc::StatusCode::NOT_FOUND, "delete of an object that is absent"};
    }
    if (req->dry_run()) {
      resp->set_generation(g->generation);
      resp->set_dry_run(true);
      return grpc::Status::OK;
    }
    for (const auto& c : req->changes()) {
      switch (c.change_case()) {
        case v1::Change::kUpsertPolicy:
          g->objects.add(c.upsert_policy());
          break;
        case v1::Change::kDeletePolicy:
          g->objects.policies.erase(c.delete_policy());
          break;
        case v1::Change::kUpsertSteering:
          g->objects.add(c.upsert_steering());
          break;
        case v1::Change::kDeleteSteering:
          g->objects.steering.erase(c.delete_steering());
          break;
        case v1::Change::kUpsertLocalSid:
          g->objects.add(c.upsert_local_sid());
          break;
        case v1::Change::kDeleteLocalSid:
          g->objects.local_sids.erase(c.delete_local_sid());
          break;
        default:
          break;
      }
    }
    if (term < g->max_term) {
      ++g->conflicts;
      std::fprintf(stderr,
                   "standin: gateway %s: CONFLICT: push of term %lu accepted after term %lu\n",
                   name.c_str(), (unsigned long)term, (unsigned long)g->max_term);
    }
    g->max_term = std::max(g->max_term, term);
    g->terms.insert(term);
    g->last_plan = plan;
    ++g->accepted;
    resp->set_generation(++g->generation);
    return grpc::Status::OK;
  }
  grpc::Status WatchEvents(grpc::ServerContext* ctx, const v1::WatchEventsRequest*,
                           grpc::ServerWriter<v1::Event>* writer) override {
    auto [_, g] = of(ctx);
    v1::Event ev;
    ev.set_kind(v1::EVENT_KIND_SUBSCRIBED);
    {
      std::lock_guard lock(g->mutex);
      ev.set_generation(g->generation);
    }
    if (!writer->Write(ev)) return grpc::Status::OK;
    // No data plane: no further events. Held open until the controller cancels.
    while (!ctx->IsCancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    return grpc::Status::OK;
  }

  // JSON: totals and, per gateway, generation, terms, counters and the objects running.
  std::string summary(bool with_objects) {
    std::lock_guard lock(mutex_);
    uint64_t accepted = 0, stale = 0, late = 0, conflicts = 0;
    std::string per;
    for (auto& [name, g] : gws_) {
      std::lock_guard l(g->mutex);
      accepted += g->accepted;
      stale += g->refused_stale;
      late += g->refused_late;
      conflicts += g->conflicts;
      per += per.empty() ? "" : ",\n";
      per += quoted(name) + ": {\"generation\": " + std::to_string(g->generation) +
             ", \"max_term\": " + std::to_string(g->max_term) +
             ", \"last_plan\": " + std::to_string(g->last_plan) +
             ", \"accepted\": " + std::to_string(g->accepted) +
             ", \"refused_stale\": " + std::to_string(g->refused_stale) +
             ", \"refused_late\": " + std::to_string(g->refused_late) +
             ", \"conflicts\": " + std::to_string(g->conflicts) + ", \"terms\": [";
      bool first = true;
      for (auto t : g->terms) {
        per += (first ? "" : ", ") + std::to_string(t);
        first = false;
      }
      per += "]";
      if (with_objects) {
        per += ", \"objects\": [";
        first = true;
        auto add = [&](const google::protobuf::Message& m) {
          per += (first ? "" : ", ") + to_json(m);
          first = false;
        };
        for (auto& [_, p] : g->objects.policies) add(p);
        for (auto& [_, r] : g->objects.steering) add(r);
        for (auto& [_, s] : g->objects.local_sids) add(s);
        per += "]";
      }
      per += "}";
    }
    return "{\"gateways_seen\": " + std::to_string(gws_.size()) +
           ", \"accepted\": " + std::to_string(accepted) +
           ", \"refused_stale\": " + std::to_string(stale) +
           ", \"refused_late\": " + std::to_string(late) +
           ", \"conflicts\": " + std::to_string(conflicts) + ",\n\"gateways\": {\n" + per + "}}\n";
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<One>> gws_;
};

void write_summary(Gateways& gws, const std::string& path, bool objects) {
  if (path.empty()) return;
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << gws.summary(objects);
  }
  std::rename(tmp.c_str(), path.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  std::string listen, summary;
  bool objects = true;
  Gateways service;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "srv6gw-gateway-standin: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--listen")
      listen = value();
    else if (a == "--summary")
      summary = value();
    else if (a == "--no-objects")
      objects = false;
    else if (a == "--apply-delay-ms")
      service.apply_delay = std::chrono::milliseconds(std::stoul(value()));
    else if (a == "--slow")
      service.slow.insert(value());
    else {
      std::fprintf(stderr,
                   "usage: srv6gw-gateway-standin --listen unix:PATH [--summary FILE] "
                   "[--no-objects] [--apply-delay-ms N --slow GATEWAY ...]\n");
      return 2;
    }
  }
  if (listen.empty()) {
    std::fprintf(stderr, "srv6gw-gateway-standin: --listen unix:PATH is required\n");
    return 2;
  }
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  if (listen.rfind("unix:", 0) == 0) ::unlink(listen.substr(5).c_str());
  grpc::ServerBuilder b;
  b.AddListeningPort(listen, grpc::InsecureServerCredentials());
  b.RegisterService(&service);
  b.SetMaxReceiveMessageSize(-1);
  auto server = b.BuildAndStart();
  if (!server) {
    std::fprintf(stderr, "srv6gw-gateway-standin: cannot listen on %s\n", listen.c_str());
    return 1;
  }
  std::fprintf(stderr, "srv6gw-gateway-standin: serving on %s\n", listen.c_str());
  while (true) {
    int sig = 0;
    sigwait(&sigs, &sig);
    write_summary(service, summary, objects);
    if (sig != SIGUSR1) break;
  }
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
  return 0;
}
