// SPDX-License-Identifier: BSD-3-Clause
// gRPC server of the agent (synchronous API: each call runs on a gRPC thread). The handlers
// decode a request, call the StateKeeper (changes) or read its published state (queries),
// and encode the answer; proto conversions are in convert*.cpp, the listener in listener.cpp.
//
// Concurrency: changes are serialised inside the StateKeeper; everything else reads the
// published AgentState, so reads never wait for an Apply in progress and always see one
// whole generation.
#include "agent/agent.hpp"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <mutex>
#include <numeric>

#include "agent/convert.hpp"
#include "agent/listener.hpp"
#include "config/huge_pages.hpp"
#include "grpc/health/v1/health.pb.h"
#include "srv6gw/v1/srv6gw.grpc.pb.h"

namespace srv6gw::agent {

namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t kDefaultPageSize = 1000;
constexpr uint32_t kMaxPageSize = 10000;
constexpr const char* kServiceName = "srv6gw.v1.Gateway";

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

uint32_t page_size(uint32_t asked) {
  return asked == 0 ? kDefaultPageSize : std::min(asked, kMaxPageSize);
}

grpc::Status bad_token() {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                      "page_token: not a token returned by this call");
}

grpc::Status to_status(const Refusal& r) {
  switch (r.code) {
    case Refusal::Code::invalid_argument:
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, r.message);
    case Refusal::Code::not_found:
      return grpc::Status(grpc::StatusCode::NOT_FOUND, r.message);
    case Refusal::Code::failed_precondition:
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, r.message);
    case Refusal::Code::unavailable:
      break;
  }
  return grpc::Status(grpc::StatusCode::UNAVAILABLE, r.message);
}

template <class Request>
std::optional<uint64_t> expected_generation(const Request& req) {
  if (!req.has_expected_generation()) return std::nullopt;
  return req.expected_generation();
}

// Who sent a change, for its log line and its Watch event: the peer, and the controller term
// and plan version a replicated srv6gw-controller sends along (gateway_client.cpp), so that a
// gateway's log shows which leader pushed each generation and whose late push it refused.
std::string origin_of(const grpc::ServerContext& ctx) {
  std::string origin = ctx.peer();
  const auto& md = ctx.client_metadata();
  const auto term = md.find("srv6gw-controller-term");
  if (term == md.end()) return origin;
  origin += " (controller term " + std::string(term->second.data(), term->second.size());
  if (const auto plan = md.find("srv6gw-plan-version"); plan != md.end())
    origin += ", plan " + std::string(plan->second.data(), plan->second.size());
  return origin + ")";
}

}  // namespace

struct Agent::Impl final : public v1::Gateway::Service {
  AgentOptions options;
  StateSink& sink;
  EventBus bus;
  StateKeeper keeper;
  std::unique_ptr<grpc::Server> server;
  std::string address;
  std::string socket_path;  // unix listener, "" for TCP
  std::atomic<unsigned> watchers{0};
  std::once_flag stopped;
  std::mutex path_handler_mutex;
  PathStateHandler path_handler;  // guarded by path_handler_mutex

  Impl(const AgentOptions& o, StateSink& s, const config::GatewayConfig& running,
       uint64_t generation, const StateExtras& extras)
      : options(o), sink(s), keeper(o.state_path, s, bus, running, generation, extras) {
    keeper.set_journal_min_bytes(o.journal_min_bytes);
    // Apply takes its request as bytes and parses it itself, into an arena (ApplyFromWire):
    // the generated handler would parse a 100k-change batch into ~500k heap objects and free
    // them one by one after the response. Index 0 is Apply, the first method of the service
    // in srv6gw.proto (as in the generated WithStreamedUnaryMethod_Apply); every agent test
    // calls Apply through this path.
    MarkMethodStreamed(
        0, new grpc::internal::StreamedUnaryHandler<grpc::ByteBuffer, v1::ApplyResponse>(
               [this](grpc::ServerContext* ctx,
                      grpc::ServerUnaryStreamer<grpc::ByteBuffer, v1::ApplyResponse>* stream) {
                 return ApplyFromWire(ctx, stream);
               }));
  }

  std::shared_ptr<const AgentState> snapshot() const { return keeper.snapshot(); }

  // Apply's wire bytes -> a request on an arena whose blocks are huge pages sized from the
  // request (one bump allocation per object, the whole arena freed at once), then Apply.
  // Refusals of undecodable bytes are the ones the generated handler gives.
  grpc::Status ApplyFromWire(
      grpc::ServerContext* ctx,
      grpc::ServerUnaryStreamer<grpc::ByteBuffer, v1::ApplyResponse>* stream) {
    grpc::ByteBuffer wire;
    if (!stream->Read(&wire)) return grpc::Status(grpc::StatusCode::INTERNAL, "No payload");
    google::protobuf::ArenaOptions arena_options;
    // The parsed objects take ~4-6 times the wire size (a 3.3 MB 100k-rule batch: ~20 MB).
    arena_options.start_block_size = std::clamp<size_t>(wire.Length() * 4, 4096, size_t(64) << 20);
    arena_options.max_block_size = size_t(64) << 20;
    arena_options.block_alloc = [](size_t n) { return config::huge_alloc(n); };
    arena_options.block_dealloc = [](void* p, size_t n) { config::huge_free(p, n); };
    google::protobuf::Arena arena(arena_options);
    const auto t0 = Clock::now();
    auto* req = google::protobuf::Arena::CreateMessage<v1::ApplyRequest>(&arena);
    if (grpc::Status parsed = grpc::SerializationTraits<v1::ApplyRequest>::Deserialize(&wire, req);
        !parsed.ok())
      return parsed;
    v1::ApplyResponse resp;
    grpc::Status st = ApplyParsed(ctx, req, &resp, ms_since(t0));
    // As the generated handler: a client gone before the response does not undo the Apply.
    if (st.ok()) (void)stream->Write(resp);
    return st;
  }

  grpc::Status Apply(grpc::ServerContext* ctx, const v1::ApplyRequest* req,
                     v1::ApplyResponse* resp) override {
    return ApplyParsed(ctx, req, resp, 0.0);
  }

  // `parse_ms`: what parsing the request took (logged).
  grpc::Status ApplyParsed(grpc::ServerContext* ctx, const v1::ApplyRequest* req,
                           v1::ApplyResponse* resp, double parse_ms) {
    ApplyResult result;
    if (auto refusal = keeper.apply(req->changes(), expected_generation(*req), req->dry_run(),
                                    origin_of(*ctx), result, parse_ms))
      return to_status(*refusal);
    resp->set_dry_run(req->dry_run());
    to_proto(result.counts, *resp->mutable_counts());
    resp->set_generation(result.generation);
    return grpc::Status::OK;
  }

  grpc::Status GetState(grpc::ServerContext*, const v1::GetStateRequest*,
                        v1::GetStateResponse* resp) override {
    const auto s = snapshot();
    resp->set_generation(s->generation);
    resp->set_policies(uint32_t(s->config.policies.size()));
    resp->set_steering_rules(uint32_t(s->config.steering.size()));
    resp->set_local_sids(uint32_t(s->config.local_sids.size()));
    resp->set_state_file(options.state_path);
    for (const config::Rail& r : s->config.rails) to_proto(r, *resp->add_rails());
    return grpc::Status::OK;
  }

  grpc::Status ListPolicies(grpc::ServerContext*, const v1::ListPoliciesRequest* req,
                            v1::ListPoliciesResponse* resp) override {
    const auto s = snapshot();
    const auto& policies = s->config.policies;
    std::string after;
    if (!req->page_token().empty()) {
      if (req->page_token().rfind("p:", 0) != 0) return bad_token();
      after = req->page_token().substr(2);
    }
    std::vector<uint32_t> order(policies.size());
    std::iota(order.begin(), order.end(), 0u);
    std::sort(order.begin(), order.end(),
              [&](uint32_t a, uint32_t b) { return policies[a].name < policies[b].name; });
    auto it = order.begin();
    if (!req->page_token().empty()) {
      it = std::partition_point(order.begin(), order.end(),
                                [&](uint32_t i) { return policies[i].name <= after; });
    }
    const uint32_t n = page_size(req->page_size());
    for (uint32_t k = 0; it != order.end() && k < n; ++it, ++k) {
      to_proto(policies[*it], *resp->add_policies());
    }
    if (it != order.end()) resp->set_next_page_token("p:" + policies[*std::prev(it)].name);
    resp->set_generation(s->generation);
    resp->set_total(uint32_t(policies.size()));
    return grpc::Status::OK;
  }

  grpc::Status GetPolicy(grpc::ServerContext*, const v1::GetPolicyRequest* req,
                         v1::SrPolicy* resp) override {
    const auto s = snapshot();
    for (const auto& p : s->config.policies) {
      if (p.name == req->name()) {
        to_proto(p, *resp);
        return grpc::Status::OK;
      }
    }
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "no policy '" + req->name() + "' (" +
                                                         config::policy_path(req->name()) + ")");
  }

  grpc::Status ListSteering(grpc::ServerContext*, const v1::ListSteeringRequest* req,
                            v1::ListSteeringResponse* resp) override {
    const auto s = snapshot();
    const auto& rules = s->config.steering;
    const auto& order = s->steering_index->by_id(rules);
    auto it = order.begin();
    if (!req->page_token().empty()) {
      const std::string& t = req->page_token();
      uint32_t after = 0;
      if (t.rfind("s:", 0) != 0) return bad_token();
      auto [p, ec] = std::from_chars(t.data() + 2, t.data() + t.size(), after);
      if (ec != std::errc() || p != t.data() + t.size()) return bad_token();
      it = std::partition_point(order.begin(), order.end(),
                                [&](uint32_t i) { return rules[i].id <= after; });
    }
    const uint32_t n = page_size(req->page_size());
    const std::string& only = req->policy();
    uint32_t taken = 0;
    uint32_t last_id = 0;
    for (; it != order.end() && taken < n; ++it) {
      const config::SteeringRule& r = rules[*it];
      last_id = r.id;
      if (!only.empty() && r.policy != only) continue;
      to_proto(r, *resp->add_rules());
      ++taken;
    }
    if (it != order.end()) resp->set_next_page_token("s:" + std::to_string(last_id));
    resp->set_generation(s->generation);
    resp->set_total(uint32_t(rules.size()));
    return grpc::Status::OK;
  }

  grpc::Status ListLocalSids(grpc::ServerContext*, const v1::ListLocalSidsRequest* req,
                             v1::ListLocalSidsResponse* resp) override {
    const auto s = snapshot();
    const auto& sids = s->config.local_sids;
    std::vector<uint32_t> order(sids.size());
    std::iota(order.begin(), order.end(), 0u);
    std::sort(order.begin(), order.end(),
              [&](uint32_t a, uint32_t b) { return sids[a].sid < sids[b].sid; });
    auto it = order.begin();
    if (!req->page_token().empty()) {
      const std::string& t = req->page_token();
      auto after = t.rfind("l:", 0) == 0 ? net::parse_ipv6(t.substr(2)) : std::nullopt;
      if (!after) return bad_token();
      it = std::partition_point(order.begin(), order.end(),
                                [&](uint32_t i) { return sids[i].sid <= *after; });
    }
    const uint32_t n = page_size(req->page_size());
    for (uint32_t k = 0; it != order.end() && k < n; ++it, ++k) {
      to_proto(sids[*it], *resp->add_local_sids());
    }
    if (it != order.end()) {
      resp->set_next_page_token("l:" + net::to_string(sids[*std::prev(it)].sid));
    }
    resp->set_generation(s->generation);
    resp->set_total(uint32_t(sids.size()));
    return grpc::Status::OK;
  }

  grpc::Status GetStats(grpc::ServerContext*, const v1::GetStatsRequest*,
                        v1::Stats* resp) override {
    const StatsSnapshot st = sink.stats();
    to_proto(st, snapshot()->generation, *resp);
    return grpc::Status::OK;
  }

  grpc::Status SetPathState(grpc::ServerContext* ctx, const v1::SetPathStateRequest* req,
                            v1::SetPathStateResponse* resp) override {
    PathStateCommand cmd;
    cmd.policy = req->policy();
    cmd.up = req->up();
    switch (req->path_case()) {
      case v1::SetPathStateRequest::kSegmentList:
        cmd.segment_list = req->segment_list();
        break;
      case v1::SetPathStateRequest::kPathId:
        if (req->path_id() > 0xffff)
          return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                              "path_id: " + std::to_string(req->path_id()) +
                                  " is out of range 0..65535 (YANG segment-list/path-id)");
        cmd.path_id = uint16_t(req->path_id());
        break;
      default:
        return grpc::Status(
            grpc::StatusCode::INVALID_ARGUMENT,
            "give segment_list or path_id: which path of policy '" + req->policy() + "'");
    }
    PathStateHandler handler;
    {
      std::lock_guard lock(path_handler_mutex);
      handler = path_handler;
    }
    if (!handler)
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "this gateway takes no path commands");
    PathStateOutcome out;
    uint64_t generation = 0;
    if (auto refusal = keeper.set_path_state(cmd, handler, origin_of(*ctx), out, generation))
      return to_status(*refusal);
    resp->set_segment_list(out.segment_list);
    resp->set_path_id(out.path_id);
    resp->set_changed(out.changed);
    resp->set_factor(out.factor);
    resp->set_generation(generation);
    return grpc::Status::OK;
  }

  grpc::Status GetEngineParams(grpc::ServerContext*, const v1::GetEngineParamsRequest*,
                               v1::GetEngineParamsResponse* resp) override {
    const auto s = snapshot();
    to_proto(s->config.engine, *resp->mutable_params());
    resp->set_generation(s->generation);
    resp->set_set_by_agent(keeper.engine_params_from_agent());
    return grpc::Status::OK;
  }

  grpc::Status SetEngineParams(grpc::ServerContext* ctx, const v1::SetEngineParamsRequest* req,
                               v1::SetEngineParamsResponse* resp) override {
    EngineParamsResult result;
    const auto edit = [&](engine::Params& p) { return merge_engine_params(req->params(), p); };
    if (auto refusal = keeper.set_engine_params(edit, expected_generation(*req), req->dry_run(),
                                                origin_of(*ctx), result))
      return to_status(*refusal);
    to_proto(result.params, *resp->mutable_params());
    resp->set_dry_run(req->dry_run());
    resp->set_changed(result.changed);
    resp->set_generation(result.generation);
    return grpc::Status::OK;
  }

  grpc::Status WatchEvents(grpc::ServerContext* ctx, const v1::WatchEventsRequest* req,
                           grpc::ServerWriter<v1::Event>* writer) override {
    std::vector<EventKind> kinds;
    for (int i = 0; i < req->kinds_size(); ++i) {
      auto k = from_proto(req->kinds(i));
      if (!k) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            "kinds[" + std::to_string(i) + "]: unknown event kind " +
                                std::to_string(int(req->kinds(i))));
      }
      kinds.push_back(*k);
    }
    if (watchers.fetch_add(1) >= options.max_watchers) {
      watchers.fetch_sub(1);
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          "too many event watchers (" + std::to_string(options.max_watchers) + ")");
    }
    auto sub = bus.subscribe(std::move(kinds));
    v1::Event out;
    grpc::Status status = grpc::Status::OK;
    while (!ctx->IsCancelled()) {
      auto e = sub->next(std::chrono::milliseconds(200));
      if (!e) {
        if (sub->closed()) {
          status = grpc::Status(grpc::StatusCode::UNAVAILABLE, "the agent is stopping");
          break;
        }
        continue;
      }
      out.Clear();
      to_proto(*e, out);
      if (!writer->Write(out)) break;  // client gone
    }
    watchers.fetch_sub(1);
    return status;
  }
};

Agent::Agent(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Agent::~Agent() {
  stop();
}

std::unique_ptr<Agent> Agent::start(const AgentOptions& options, StateSink& sink,
                                    const config::GatewayConfig& running, uint64_t generation,
                                    std::string& error, const StateExtras& extras) {
  if (!options.enabled) {
    error = "the agent is disabled (--no-agent)";
    return nullptr;
  }
  auto impl = std::make_unique<Impl>(options, sink, running, generation, extras);
  if (!options.state_path.empty()) {
    // Fail now, not at the first Apply: the directory must exist and take files.
    error = check_state_directory(options.state_path);
    if (!error.empty()) return nullptr;
  }
  std::optional<Listener> listener = prepare_listener(options, error);
  if (!listener) return nullptr;
  impl->socket_path = listener->socket_path;

  static std::once_flag grpc_init;
  std::call_once(grpc_init, [] {
    grpc::EnableDefaultHealthCheckService(true);
    grpc::reflection::InitProtoReflectionServerBuilderPlugin();
    // gRPC serves health checks from its own (upb) code; linking our compiled schema puts
    // grpc.health.v1 in the descriptor pool so that reflection can describe it (grpcurl).
    (void)grpc::health::v1::HealthCheckRequest::descriptor();
  });

  grpc::ServerBuilder builder;
  int bound_port = 0;
  builder.AddListeningPort(listener->address, listener->credentials, &bound_port);
  builder.RegisterService(impl.get());
  const int max = int(std::min<size_t>(options.max_message_bytes, INT32_MAX));
  builder.SetMaxReceiveMessageSize(max);
  builder.SetMaxSendMessageSize(max);
  impl->server = builder.BuildAndStart();
  if (!impl->server || bound_port == 0) {
    error = "cannot listen on " + listener->address + " (address in use, or not an address?)";
    return nullptr;
  }
  if (!impl->socket_path.empty()) {
    // Whoever may write to the socket controls the gateway: owner and group only.
    ::chmod(impl->socket_path.c_str(), 0660);
    impl->address = listener->address;
  } else {
    const auto colon = listener->address.rfind(':');
    impl->address = listener->address.substr(0, colon) + ":" + std::to_string(bound_port);
  }
  auto* health = impl->server->GetHealthCheckService();
  if (health) {
    health->SetServingStatus("", true);
    health->SetServingStatus(kServiceName, true);
  }
  spdlog::info("agent: serving {} on {} at generation {}{}", kServiceName, impl->address,
               generation,
               options.state_path.empty() ? ", state not persisted"
                                          : ", state persisted to " + options.state_path);
  return std::unique_ptr<Agent>(new Agent(std::move(impl)));
}

void Agent::stop() {
  if (!impl_) return;
  std::call_once(impl_->stopped, [this] {
    if (auto* health = impl_->server->GetHealthCheckService()) {
      health->SetServingStatus(false);
    }
    impl_->bus.close();  // event streams end
    impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    impl_->server->Wait();
    if (!impl_->socket_path.empty()) ::unlink(impl_->socket_path.c_str());
    // A cleanly stopped gateway leaves one compact state file (a fast restart).
    if (auto why = impl_->keeper.compact(); !why.empty())
      spdlog::error("agent: cannot write a snapshot at stop ({}); the journal stays", why);
    spdlog::info("agent: stopped");
  });
}

void Agent::set_path_state_handler(PathStateHandler handler) {
  std::lock_guard lock(impl_->path_handler_mutex);
  impl_->path_handler = std::move(handler);
}

EventBus& Agent::events() {
  return impl_->bus;
}

uint64_t Agent::generation() const {
  return impl_->snapshot()->generation;
}

std::shared_ptr<const AgentState> Agent::state() const {
  return impl_->snapshot();
}

const std::string& Agent::address() const {
  return impl_->address;
}

std::shared_ptr<grpc::Channel> Agent::in_process_channel() {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  return impl_->server->InProcessChannel(args);
}

}  // namespace srv6gw::agent
