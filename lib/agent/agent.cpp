// SPDX-License-Identifier: BSD-3-Clause
// gRPC server of the agent (synchronous API: each call runs on a gRPC thread).
//
// Concurrency: Apply calls are serialised by apply_mutex_; everything else reads the
// published AgentState (a shared_ptr swapped under state_mutex_), so reads never wait for an
// Apply in progress and always see one whole generation.
#include "agent/agent.hpp"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <numeric>
#include <sstream>
#include <thread>

#include "agent/convert.hpp"
#include "agent/huge_pages.hpp"
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

void to_proto(const ChangeCounts& c, v1::ChangeCounts& out) {
  out.set_policies_upserted(c.policies_upserted);
  out.set_policies_deleted(c.policies_deleted);
  out.set_steering_upserted(c.steering_upserted);
  out.set_steering_deleted(c.steering_deleted);
  out.set_local_sids_upserted(c.local_sids_upserted);
  out.set_local_sids_deleted(c.local_sids_deleted);
}

v1::PathState to_proto(PathState s) {
  switch (s) {
    case PathState::up:
      return v1::PATH_STATE_UP;
    case PathState::degraded:
      return v1::PATH_STATE_DEGRADED;
    case PathState::down:
      return v1::PATH_STATE_DOWN;
    case PathState::unspecified:
      break;
  }
  return v1::PATH_STATE_UNSPECIFIED;
}

v1::EventKind to_proto(EventKind k) {
  switch (k) {
    case EventKind::subscribed:
      return v1::EVENT_KIND_SUBSCRIBED;
    case EventKind::config_applied:
      return v1::EVENT_KIND_CONFIG_APPLIED;
    case EventKind::path_weight:
      return v1::EVENT_KIND_PATH_WEIGHT;
    case EventKind::path_state:
      return v1::EVENT_KIND_PATH_STATE;
    case EventKind::events_lost:
      return v1::EVENT_KIND_EVENTS_LOST;
  }
  return v1::EVENT_KIND_UNSPECIFIED;
}

void to_proto(const Event& e, v1::Event& out) {
  out.set_sequence(e.sequence);
  out.set_generation(e.generation);
  out.set_time_unix_ns(e.time_unix_ns);
  out.set_kind(to_proto(e.kind));
  if (auto* a = std::get_if<ConfigAppliedEvent>(&e.detail)) {
    to_proto(a->counts, *out.mutable_config_applied()->mutable_counts());
    out.mutable_config_applied()->set_origin(a->origin);
    out.mutable_config_applied()->set_engine_params(a->engine_params);
  } else if (auto* p = std::get_if<PathEvent>(&e.detail)) {
    auto* o = out.mutable_path();
    o->set_policy(p->policy);
    o->set_segment_list(p->segment_list);
    o->set_path_id(p->path_id);
    o->set_old_factor(p->old_factor);
    o->set_new_factor(p->new_factor);
    o->set_old_state(to_proto(p->old_state));
    o->set_new_state(to_proto(p->new_state));
    o->set_congestion(p->congestion);
    o->set_reason(p->reason);
  } else if (auto* lost = std::get_if<uint64_t>(&e.detail)) {
    out.set_lost(*lost);
  }
}

std::optional<EventKind> from_proto(v1::EventKind k) {
  switch (k) {
    case v1::EVENT_KIND_SUBSCRIBED:
      return EventKind::subscribed;
    case v1::EVENT_KIND_CONFIG_APPLIED:
      return EventKind::config_applied;
    case v1::EVENT_KIND_PATH_WEIGHT:
      return EventKind::path_weight;
    case v1::EVENT_KIND_PATH_STATE:
      return EventKind::path_state;
    case v1::EVENT_KIND_EVENTS_LOST:
      return EventKind::events_lost;
    default:
      return std::nullopt;
  }
}

void worker_to_proto(unsigned index, const dataplane::WorkerCounters& w, v1::WorkerStats& o) {
  o.set_index(index);
  o.set_rx_host(w.rx_host);
  o.set_rx_fabric(w.rx_fabric);
  o.set_tx_host(w.tx_host);
  o.set_tx_fabric(w.tx_fabric);
  o.set_rx_host_bytes(w.rx_host_bytes);
  o.set_rx_fabric_bytes(w.rx_fabric_bytes);
  o.set_tx_host_bytes(w.tx_host_bytes);
  o.set_tx_fabric_bytes(w.tx_fabric_bytes);
  o.set_encap(w.encap);
  o.set_decap(w.decap);
  o.set_passed_host_to_fabric(w.passed_host_to_fabric);
  o.set_passed_fabric_to_host(w.passed_fabric_to_host);
  o.set_inner_ce_marked(w.inner_ce_marked);
  o.set_cnp_seen(w.cnp_seen);
  o.set_outer_ce_seen(w.outer_ce_seen);
  o.set_chained_header(w.chained_header);
  o.set_bursts(w.bursts);
  o.set_busy_tsc(w.busy_tsc);
  o.set_feedback_events(w.feedback_events);
  o.set_feedback_dropped(w.feedback_dropped);
  o.set_cnp_reflected(w.cnp_reflected);
}

// Every drop reason of one worker: (name, count), in a fixed order.
template <class F>
void for_each_drop(const dataplane::WorkerCounters& w, F f) {
  for (size_t r = 0; r < w.drops.size(); ++r) {
    f(std::string(dataplane::to_string(dataplane::DropReason(r))), w.drops[r]);
  }
  // ok = 0 is not a drop
  for (size_t s = 1; s < w.parse_status.size(); ++s) {
    f(std::string("parse.") + net::to_string(net::ParseStatus(s)), w.parse_status[s]);
  }
  for (size_t s = 1; s < w.decap_status.size(); ++s) {
    f(std::string("decap.") + srv6::to_string(srv6::DecapStatus(s)), w.decap_status[s]);
  }
}

std::string read_file(const std::string& path, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot read " + path + ": " + std::strerror(errno);
    return "";
  }
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// A unix socket path left by a previous process is removed; one a live process still serves
// is not stolen.
bool prepare_unix_socket(const std::string& path, std::string& error) {
  if (path.empty()) {
    error = "empty unix socket path";
    return false;
  }
  sockaddr_un sa{};
  if (path.size() >= sizeof sa.sun_path) {
    error = "unix socket path " + path + " is longer than " +
            std::to_string(sizeof sa.sun_path - 1) + " bytes";
    return false;
  }
  const std::filesystem::path p(path);
  std::error_code ec;
  if (p.has_parent_path()) {
    std::filesystem::create_directories(p.parent_path(), ec);
    if (ec) {
      error = "cannot create " + p.parent_path().string() + ": " + ec.message();
      return false;
    }
  }
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return true;
  if (!S_ISSOCK(st.st_mode)) {
    error = path + " exists and is not a socket: not replacing it";
    return false;
  }
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    sa.sun_family = AF_UNIX;
    std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
    const bool live = ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
    ::close(fd);
    if (live) {
      error = "another process is serving " + path + " (is srv6gw already running?)";
      return false;
    }
  }
  ::unlink(path.c_str());
  return true;
}

void to_proto(const engine::Params& p, v1::EngineParams& o) {
  o.set_enabled(p.enabled);
  o.set_interval_us(p.interval_us);
  o.set_alpha(p.alpha);
  o.set_decrease(p.decrease);
  o.set_min_factor(p.min_factor);
  o.set_decrease_gap_us(p.decrease_gap_us);
  o.set_exclude_threshold(p.exclude_threshold);
  o.set_readmit_threshold(p.readmit_threshold);
  o.set_readmit_factor(p.readmit_factor);
  o.set_hold_down_us(p.hold_down_us);
  o.set_max_hold_down_us(p.max_hold_down_us);
  o.set_recovery_step(p.recovery_step);
  o.set_recovery_period_us(p.recovery_period_us);
  o.set_reflect(p.reflect);
}

// The fields present in `in` overwrite `p`. Decimals are rounded to the six fraction digits
// of the YANG decimal64 leaves (so what runs is what the state file will hold). Returns the
// first non-finite field ("params.alpha: ..."), "" otherwise.
std::string merge_engine_params(const v1::EngineParams& in, engine::Params& p) {
  std::string bad;
  auto dec = [&](bool has, double v, const char* name, double& to) {
    if (!has || !bad.empty()) return;
    if (!std::isfinite(v) || std::fabs(v) > 1e12) {
      bad = std::string("params.") + name + ": " + std::to_string(v) +
            " is not a usable number (/srv6gw:gateway/engine/" + name + ")";
      for (size_t i = bad.find('(') + 1; i < bad.size(); ++i)
        if (bad[i] == '_') bad[i] = '-';
      return;
    }
    to = std::round(v * 1e6) / 1e6;
  };
  if (in.has_enabled()) p.enabled = in.enabled();
  if (in.has_interval_us()) p.interval_us = in.interval_us();
  dec(in.has_alpha(), in.alpha(), "alpha", p.alpha);
  dec(in.has_decrease(), in.decrease(), "decrease", p.decrease);
  dec(in.has_min_factor(), in.min_factor(), "min_factor", p.min_factor);
  if (in.has_decrease_gap_us()) p.decrease_gap_us = in.decrease_gap_us();
  dec(in.has_exclude_threshold(), in.exclude_threshold(), "exclude_threshold", p.exclude_threshold);
  dec(in.has_readmit_threshold(), in.readmit_threshold(), "readmit_threshold", p.readmit_threshold);
  dec(in.has_readmit_factor(), in.readmit_factor(), "readmit_factor", p.readmit_factor);
  if (in.has_hold_down_us()) p.hold_down_us = in.hold_down_us();
  if (in.has_max_hold_down_us()) p.max_hold_down_us = in.max_hold_down_us();
  dec(in.has_recovery_step(), in.recovery_step(), "recovery_step", p.recovery_step);
  if (in.has_recovery_period_us()) p.recovery_period_us = in.recovery_period_us();
  if (in.has_reflect()) p.reflect = in.reflect();
  return bad;
}

// "params.<field>: <why> (<YANG node>)" for a refusal under /srv6gw:gateway/engine, else the
// refusal as it is (a configuration that did not validate for another reason).
std::string describe_engine_error(const config::ConfigError& e) {
  constexpr std::string_view kEngine = "/srv6gw:gateway/engine/";
  if (e.path.rfind(kEngine, 0) == 0) {
    std::string field = e.path.substr(kEngine.size());
    std::replace(field.begin(), field.end(), '-', '_');
    return "params." + field + ": " + e.message + " (" + e.path + ")";
  }
  return "configuration refused: " + e.message + " (" + e.path + ")";
}

// Paths down whose path id the configuration no longer has are forgotten (the engine forgets
// them too: its path state follows the path id).
std::vector<PathDown> paths_still_configured(const std::vector<PathDown>& down,
                                             const config::GatewayConfig& cfg) {
  std::vector<PathDown> kept;
  for (const PathDown& d : down) {
    bool known = false;
    for (const config::Policy& p : cfg.policies)
      for (const config::SegmentList& sl : p.segment_lists) known |= sl.path_id == d.path_id;
    if (known) kept.push_back(d);
  }
  return kept;
}

}  // namespace

struct Agent::Impl final : public v1::Gateway::Service {
  AgentOptions options;
  StateSink& sink;
  EventBus bus;
  std::mutex apply_mutex;  // one Apply at a time (gRPC threads)
  mutable std::mutex state_mutex;
  std::shared_ptr<const AgentState> current;  // guarded by state_mutex
  // Relations between the objects of `current` for incremental validation. Read and
  // written only by Apply, under apply_mutex.
  ConfigIndex index;
  // Apply only (apply_mutex): the state published before `current` (readers may still hold
  // it) and the changes that turn it into `current`. The next Apply brings it up to date and
  // edits it into the next state, so that no Apply copies the whole configuration. Null when
  // there is none (start, or after a failed Apply left it half-edited).
  std::shared_ptr<AgentState> spare;
  Changeset spare_behind;
  std::shared_ptr<AgentState> current_mutable;  // == current, writable for the next swap

  // A state equal to `base` that nobody reads, to edit into the next one: the spare brought
  // up to date (O(last batch)) once its last readers are gone, else a copy (O(size)).
  std::shared_ptr<AgentState> take_spare(const std::shared_ptr<const AgentState>& base) {
    if (spare) {
      // Readers hold a state for one call (a List page, a Get): wait for them a little.
      for (int i = 0; i < 2000 && spare.use_count() > 1; ++i)
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      if (spare.use_count() == 1) {
        auto s = std::move(spare);
        apply_changeset(spare_behind, *s);
        spare_behind = Changeset{};
        s->generation = base->generation;
        return s;
      }
      spdlog::info("agent: the previous state is still being read; copying the running one");
      spare.reset();
    }
    return copy_state(*base);
  }
  std::unique_ptr<grpc::Server> server;
  std::string address;
  std::string socket_path;  // unix listener, "" for TCP
  std::atomic<unsigned> watchers{0};
  std::once_flag stopped;
  std::mutex path_handler_mutex;
  PathStateHandler path_handler;  // guarded by path_handler_mutex
  // What the state file holds beside the configuration (paths down, engine parameters set
  // over gRPC). Read and written by gRPC threads under apply_mutex (every state-file write
  // holds it); engine_params_from_agent mirrors its flag for lock-free readers.
  StateExtras extras;
  std::atomic<bool> engine_params_from_agent{false};

  Impl(const AgentOptions& o, StateSink& s) : options(o), sink(s) {
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
    arena_options.block_alloc = [](size_t n) { return huge_alloc(n); };
    arena_options.block_dealloc = [](void* p, size_t n) { huge_free(p, n); };
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

  std::shared_ptr<const AgentState> snapshot() const {
    std::lock_guard lock(state_mutex);
    return current;
  }

  static std::string stale_generation(uint64_t expected, uint64_t running) {
    return "stale generation: expected_generation is " + std::to_string(expected) +
           ", the running generation is " + std::to_string(running);
  }

  // Writes the state file for `generation` (when the agent persists). On failure puts the
  // data plane back to `previous` (by `undo`, the inverse of the steering delta just applied)
  // and returns the UNAVAILABLE status to answer with; nothing when it was written.
  std::optional<grpc::Status> persist_or_roll_back(const config::GatewayConfig& cfg,
                                                   uint64_t generation, const StateExtras& extras,
                                                   const config::GatewayConfig& previous,
                                                   const policy::SteeringDelta& undo) {
    if (options.state_path.empty()) return std::nullopt;
    const std::string why = write_state_file(options.state_path, cfg, generation, extras);
    if (why.empty()) return std::nullopt;
    spdlog::error("agent: cannot persist generation {}: {}; rolling back", generation, why);
    if (auto e = sink.apply_delta(previous, undo))
      spdlog::critical(
          "agent: ROLLBACK FAILED, the data plane runs an unpersisted configuration: {}: {}",
          e->path, e->message);
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the state could not be persisted (" + why +
                                                           "); the change was rolled back");
  }

  void publish(std::shared_ptr<const AgentState> next) {
    std::lock_guard lock(state_mutex);
    current = std::move(next);
  }

  grpc::Status Apply(grpc::ServerContext* ctx, const v1::ApplyRequest* req,
                     v1::ApplyResponse* resp) override {
    return ApplyParsed(ctx, req, resp, 0.0);
  }

  // `parse_ms`: what parsing the request took (logged).
  grpc::Status ApplyParsed(grpc::ServerContext* ctx, const v1::ApplyRequest* req,
                           v1::ApplyResponse* resp, double parse_ms) {
    const auto t0 = Clock::now();
    std::lock_guard apply_lock(apply_mutex);
    const auto base = snapshot();
    if (req->has_expected_generation() && req->expected_generation() != base->generation) {
      const std::string message = stale_generation(req->expected_generation(), base->generation);
      // Logged like every other refusal: two controllers racing each other must be visible.
      spdlog::warn("agent: refused a batch of {} changes from {}: {}", req->changes_size(),
                   ctx->peer(), message);
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, message);
    }
    if (req->changes_size() == 0) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "changes: the batch is empty");
    }
    Batch batch(*base, index, req->changes());
    if (auto e = batch.run()) {
      spdlog::warn("agent: {}refused a batch of {} changes from {}: {}",
                   req->dry_run() ? "dry run " : "", req->changes_size(), ctx->peer(), e->message);
      return grpc::Status(e->code == BatchCode::not_found ? grpc::StatusCode::NOT_FOUND
                                                          : grpc::StatusCode::INVALID_ARGUMENT,
                          e->message);
    }
    const double batch_ms = ms_since(t0);
    resp->set_dry_run(req->dry_run());
    to_proto(batch.counts(), *resp->mutable_counts());
    if (req->dry_run()) {
      resp->set_generation(base->generation);
      spdlog::info("agent: dry run of {} changes from {} would apply ({:.1f} ms)",
                   req->changes_size(), ctx->peer(), batch_ms);
      return grpc::Status::OK;
    }

    const auto t_edit = Clock::now();
    std::shared_ptr<AgentState> next = take_spare(base);
    apply_changeset(batch.changeset(), *next);
    const double edit_ms = ms_since(t_edit);

    const auto t1 = Clock::now();
    // The data plane edits only the steering entries the batch changed (O(batch), not
    // O(configuration)); the pointers are valid until the batch and `base` go.
    policy::SteeringDelta steering_delta;
    steering_delta.rules.reserve(batch.delta().rules.size());
    for (const RuleDelta& d : batch.delta().rules)
      steering_delta.rules.push_back({d.before, d.after, d.after_index});
    if (auto e = sink.apply_delta(next->config, steering_delta)) {
      const std::string msg = "data plane refused: " + batch.describe(*e);
      spdlog::warn("agent: batch from {} {}", ctx->peer(), msg);
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, msg);  // `next` is dropped
    }
    const double sink_ms = ms_since(t1);
    const uint64_t generation = base->generation + 1;
    next->generation = generation;

    const auto t2 = Clock::now();
    StateExtras next_extras = extras;
    next_extras.paths_down = paths_still_configured(extras.paths_down, next->config);
    if (auto refused = persist_or_roll_back(next->config, generation, next_extras, base->config,
                                            steering_delta.inverse()))
      return *refused;
    const double persist_ms = ms_since(t2);
    extras = std::move(next_extras);

    const auto t3 = Clock::now();
    index.commit(batch.delta());  // before `base` can be edited: delta() points into it
    spare = std::move(current_mutable);
    spare_behind = batch.take_changeset();
    current_mutable = next;
    publish(std::move(next));
    const double commit_ms = ms_since(t3);
    bus.set_generation(generation);
    Event ev;
    ev.kind = EventKind::config_applied;
    ev.generation = generation;
    ev.detail = ConfigAppliedEvent{batch.counts(), ctx->peer()};
    bus.publish(std::move(ev));

    const ChangeCounts& c = batch.counts();
    spdlog::info(
        "agent: generation {} from {}: policies +{} -{}, steering +{} -{}, local SIDs +{} -{} "
        "(validate {:.1f} ms, edit {:.1f} ms, data plane {:.1f} ms, persist {:.1f} ms); "
        "validate = convert {:.1f} + delta {:.1f} + check {:.1f} ms; index commit {:.1f} ms; "
        "in the handler {:.1f} ms, after parsing the request in {:.1f} ms",
        generation, ctx->peer(), c.policies_upserted, c.policies_deleted, c.steering_upserted,
        c.steering_deleted, c.local_sids_upserted, c.local_sids_deleted, batch_ms, edit_ms, sink_ms,
        persist_ms, batch.times().convert_ms, batch.times().delta_ms, batch.times().check_ms,
        commit_ms, ms_since(t0), parse_ms);
    resp->set_generation(generation);
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
    resp->set_generation(snapshot()->generation);
    for (const PortCounters& p : st.ports) {
      auto* o = resp->add_ports();
      o->set_role(p.role);
      o->set_name(p.name);
      o->set_rx_packets(p.rx_packets);
      o->set_rx_bytes(p.rx_bytes);
      o->set_tx_packets(p.tx_packets);
      o->set_tx_bytes(p.tx_bytes);
      o->set_rx_missed(p.rx_missed);
      o->set_rx_errors(p.rx_errors);
      o->set_tx_errors(p.tx_errors);
      o->set_rx_nombuf(p.rx_nombuf);
    }
    std::vector<std::pair<std::string, uint64_t>> totals;
    for (size_t i = 0; i < st.workers.size(); ++i) {
      const auto& w = st.workers[i];
      auto* o = resp->add_workers();
      worker_to_proto(unsigned(i), w, *o);
      size_t k = 0;
      for_each_drop(w, [&](std::string name, uint64_t value) {
        if (k == totals.size()) totals.emplace_back(name, 0);
        totals[k++].second += value;
        if (value == 0) return;
        auto* d = o->add_drops();
        d->set_name(std::move(name));
        d->set_value(value);
      });
    }
    if (totals.empty()) {
      for_each_drop(dataplane::WorkerCounters{},
                    [&](std::string name, uint64_t) { totals.emplace_back(std::move(name), 0); });
    }
    for (auto& [name, value] : totals) {
      auto* d = resp->add_drops();
      d->set_name(name);
      d->set_value(value);
    }
    // Paths arrive grouped by policy (the Gateway walks policies in turn).
    v1::PolicyStats* policy = nullptr;
    for (const auto& p : st.paths) {
      if (!policy || policy->name() != p.policy) {
        policy = resp->add_policies();
        policy->set_name(p.policy);
      }
      auto* o = policy->add_paths();
      o->set_segment_list(p.segment_list);
      o->set_path_id(p.path_id);
      o->set_weight(p.weight_configured);
      o->set_factor(p.factor);
      o->set_packets(p.packets);
      o->set_bytes(p.bytes);
      for (const engine::ProbePathView& pv : st.probes) {
        if (pv.path_id != p.path_id) continue;
        v1::ProbeStats* ps = o->mutable_probe();
        ps->set_state(pv.state == engine::ProbeState::up ? v1::PATH_STATE_UP : v1::PATH_STATE_DOWN);
        ps->set_last_change_ns(pv.last_change_ns);
        ps->set_sent(pv.sent);
        ps->set_answered(pv.answered);
        ps->set_lost(pv.lost);
        ps->set_late(pv.late);
        ps->set_loss_ratio(pv.loss_ratio);
        ps->set_rtt_min_ns(pv.rtt_min_ns);
        ps->set_rtt_avg_ns(pv.rtt_avg_ns);
        ps->set_rtt_p99_ns(pv.rtt_p99_ns);
        ps->set_consecutive_lost(pv.consecutive_lost);
      }
      policy->set_packets(policy->packets() + p.packets);
      policy->set_bytes(policy->bytes() + p.bytes);
    }
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
    // Serialised with Apply and SetEngineParams: every state-file write holds apply_mutex.
    std::lock_guard apply_lock(apply_mutex);
    const PathStateOutcome out = handler(cmd);
    const std::string what = "policy '" + cmd.policy + "' " +
                             (cmd.segment_list ? "segment-list '" + *cmd.segment_list + "'"
                                               : "path id " + std::to_string(*cmd.path_id));
    switch (out.status) {
      case PathStateOutcome::Status::ok:
        break;
      case PathStateOutcome::Status::not_found:
        return grpc::Status(grpc::StatusCode::NOT_FOUND,
                            what + ": " + (out.message.empty() ? "no such path" : out.message));
      case PathStateOutcome::Status::engine_disabled:
        return grpc::Status(
            grpc::StatusCode::FAILED_PRECONDITION,
            what + ": " + (out.message.empty() ? "the local SR engine is disabled" : out.message));
      case PathStateOutcome::Status::unavailable:
        return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                            what + ": " + (out.message.empty() ? "not running" : out.message));
    }
    // A path down is persisted (down again after a restart); a path up is forgotten.
    StateExtras next_extras = extras;
    auto& down = next_extras.paths_down;
    down.erase(std::remove_if(down.begin(), down.end(),
                              [&](const PathDown& d) { return d.path_id == out.path_id; }),
               down.end());
    if (!cmd.up) down.push_back(PathDown{cmd.policy, out.segment_list, out.path_id});
    if (!(next_extras == extras) && !options.state_path.empty()) {
      const auto s = snapshot();
      if (auto why = write_state_file(options.state_path, s->config, s->generation, next_extras);
          !why.empty()) {
        spdlog::error("agent: cannot persist {} {}: {}; putting it back", what,
                      cmd.up ? "up" : "down", why);
        if (out.changed) {
          PathStateCommand undo = cmd;
          undo.up = !cmd.up;
          undo.segment_list.reset();
          undo.path_id = out.path_id;
          if (handler(undo).status != PathStateOutcome::Status::ok)
            spdlog::critical("agent: could not put {} back; the engine runs an unpersisted state",
                             what);
        }
        return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                            what + ": the state could not be persisted (" + why +
                                "); the path was put back as it was");
      }
    }
    extras = std::move(next_extras);
    spdlog::info("agent: {} set {} by {}{}", what, cmd.up ? "up" : "down", ctx->peer(),
                 out.changed ? "" : " (no change)");
    resp->set_segment_list(out.segment_list);
    resp->set_path_id(out.path_id);
    resp->set_changed(out.changed);
    resp->set_factor(out.factor);
    resp->set_generation(snapshot()->generation);
    return grpc::Status::OK;
  }

  grpc::Status GetEngineParams(grpc::ServerContext*, const v1::GetEngineParamsRequest*,
                               v1::GetEngineParamsResponse* resp) override {
    const auto s = snapshot();
    to_proto(s->config.engine, *resp->mutable_params());
    resp->set_generation(s->generation);
    resp->set_set_by_agent(engine_params_from_agent.load());
    return grpc::Status::OK;
  }

  // Like an Apply of the engine container alone: same validation, publication through the
  // sink (the daemon's engine takes the new parameters on its next poll), persistence and
  // generation, all or nothing.
  grpc::Status SetEngineParams(grpc::ServerContext* ctx, const v1::SetEngineParamsRequest* req,
                               v1::SetEngineParamsResponse* resp) override {
    std::lock_guard apply_lock(apply_mutex);
    const auto base = snapshot();
    if (req->has_expected_generation() && req->expected_generation() != base->generation) {
      const std::string message = stale_generation(req->expected_generation(), base->generation);
      spdlog::warn("agent: refused engine parameters from {}: {}", ctx->peer(), message);
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, message);
    }
    engine::Params params = base->config.engine;
    if (auto bad = merge_engine_params(req->params(), params); !bad.empty()) {
      spdlog::warn("agent: refused engine parameters from {}: {}", ctx->peer(), bad);
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, bad);
    }
    config::GatewayConfig candidate = base->config;
    candidate.engine = params;
    if (auto e = config::validate(candidate)) {
      const std::string msg = describe_engine_error(*e);
      spdlog::warn("agent: {}refused engine parameters from {}: {}",
                   req->dry_run() ? "dry run " : "", ctx->peer(), msg);
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, msg);
    }
    to_proto(params, *resp->mutable_params());
    resp->set_dry_run(req->dry_run());
    resp->set_generation(base->generation);
    const bool changed = !(params == base->config.engine);
    resp->set_changed(changed);
    if (req->dry_run() || !changed) return grpc::Status::OK;

    // Steering is unchanged: an empty delta spares the data plane a walk of every rule.
    if (auto e = sink.apply_delta(candidate, policy::SteeringDelta{})) {
      const std::string msg = "data plane refused: " + describe_engine_error(*e);
      spdlog::warn("agent: engine parameters from {}: {}", ctx->peer(), msg);
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, msg);
    }
    const uint64_t generation = base->generation + 1;
    StateExtras next_extras = extras;
    next_extras.engine_params_from_agent = true;
    if (auto refused = persist_or_roll_back(candidate, generation, next_extras, base->config,
                                            policy::SteeringDelta{}))
      return *refused;
    extras = std::move(next_extras);
    engine_params_from_agent.store(true);
    // The new state replaces the whole configuration object, so Apply's spare (an older
    // copy it would bring up to date with policy changes only) and the index (pointers into
    // the replaced object) are rebuilt from it: otherwise the next Apply would edit the spare
    // and silently revert these parameters.
    auto next = make_state(std::move(candidate), generation);
    spare.reset();
    spare_behind = Changeset{};
    current_mutable = next;
    index = ConfigIndex(current_mutable->config);
    publish(std::move(next));
    bus.set_generation(generation);
    Event ev;
    ev.kind = EventKind::config_applied;
    ev.generation = generation;
    ev.detail = ConfigAppliedEvent{ChangeCounts{}, ctx->peer(), true};
    bus.publish(std::move(ev));
    spdlog::info("agent: generation {} from {}: local SR engine parameters changed", generation,
                 ctx->peer());
    resp->set_generation(generation);
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
  auto impl = std::make_unique<Impl>(options, sink);
  impl->current_mutable = make_state(running, generation);
  impl->current = impl->current_mutable;
  impl->index = ConfigIndex(impl->current->config);
  impl->extras = extras;
  impl->engine_params_from_agent.store(extras.engine_params_from_agent);
  // The spare state the first Apply edits (afterwards the previous state serves): copied now,
  // at start, rather than during the first Apply.
  impl->spare = copy_state(*impl->current);
  impl->bus.set_generation(generation);

  if (!options.state_path.empty()) {
    // Fail now, not at the first Apply: the directory must exist and take files.
    const std::filesystem::path sp(options.state_path);
    std::error_code ec;
    if (sp.has_parent_path()) std::filesystem::create_directories(sp.parent_path(), ec);
    if (ec) {
      error = "agent state directory " + sp.parent_path().string() + ": " + ec.message();
      return nullptr;
    }
    const std::string probe = options.state_path + ".probe-" + std::to_string(::getpid());
    std::ofstream f(probe);
    if (!f) {
      error = "cannot write in the directory of the agent state file " + options.state_path + ": " +
              std::strerror(errno);
      return nullptr;
    }
    f.close();
    std::filesystem::remove(probe, ec);
  }

  std::shared_ptr<grpc::ServerCredentials> creds;
  std::string listen = options.listen;
  const bool any_tls =
      !options.tls_cert.empty() || !options.tls_key.empty() || !options.tls_client_ca.empty();
  if (is_unix_listen(listen)) {
    if (any_tls) {
      error =
          "the --agent-tls-* options are for a TCP listener (--agent-listen HOST:PORT); a "
          "unix socket is protected by its file permissions";
      return nullptr;
    }
    impl->socket_path = unix_socket_path(listen);
    if (!prepare_unix_socket(impl->socket_path, error)) return nullptr;
    listen = "unix:" + impl->socket_path;
    creds = grpc::InsecureServerCredentials();
  } else if (any_tls) {
    std::string missing;
    if (options.tls_cert.empty()) missing += " --agent-tls-cert";
    if (options.tls_key.empty()) missing += " --agent-tls-key";
    if (options.tls_client_ca.empty()) missing += " --agent-tls-client-ca";
    if (!missing.empty()) {
      error = "TCP with TLS needs mutual TLS: missing" + missing;
      return nullptr;
    }
    grpc::SslServerCredentialsOptions ssl(
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
    pair.private_key = read_file(options.tls_key, error);
    if (!error.empty()) return nullptr;
    pair.cert_chain = read_file(options.tls_cert, error);
    if (!error.empty()) return nullptr;
    ssl.pem_root_certs = read_file(options.tls_client_ca, error);
    if (!error.empty()) return nullptr;
    ssl.pem_key_cert_pairs.push_back(std::move(pair));
    creds = grpc::SslServerCredentials(ssl);
  } else if (options.insecure_tcp) {
    spdlog::warn("**************************************************************************");
    spdlog::warn("agent: PLAIN TCP on {} (--agent-insecure-tcp): no TLS, no authentication.",
                 listen);
    spdlog::warn("agent: anyone who can reach this port can reprogram the gateway. Lab use only.");
    spdlog::warn("**************************************************************************");
    creds = grpc::InsecureServerCredentials();
  } else {
    error = "refusing plain TCP on " + listen +
            ": give --agent-tls-cert, --agent-tls-key and --agent-tls-client-ca (mutual TLS), "
            "or --agent-insecure-tcp for a lab";
    return nullptr;
  }

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
  builder.AddListeningPort(listen, creds, &bound_port);
  builder.RegisterService(impl.get());
  const int max = int(std::min<size_t>(options.max_message_bytes, INT32_MAX));
  builder.SetMaxReceiveMessageSize(max);
  builder.SetMaxSendMessageSize(max);
  impl->server = builder.BuildAndStart();
  if (!impl->server || bound_port == 0) {
    error = "cannot listen on " + listen + " (address in use, or not an address?)";
    return nullptr;
  }
  if (!impl->socket_path.empty()) {
    // Whoever may write to the socket controls the gateway: owner and group only.
    ::chmod(impl->socket_path.c_str(), 0660);
    impl->address = listen;
  } else {
    const auto colon = listen.rfind(':');
    impl->address = listen.substr(0, colon) + ":" + std::to_string(bound_port);
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
