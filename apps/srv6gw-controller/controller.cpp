// SPDX-License-Identifier: BSD-3-Clause
#include "controller.hpp"

#include <fcntl.h>
#include <google/protobuf/util/json_util.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace srv6gw::sr_controller {
namespace {

constexpr const char* kStateFormat = "srv6gw-controller-state/1";
constexpr size_t kRecentEvents = 1024;
constexpr size_t kSubscriberQueue = 4096;

uint64_t now_unix_ns() {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count());
}

std::string path_key(const std::string& gw, uint32_t path_id) {
  return gw + "/" + std::to_string(path_id);
}

}  // namespace

// ---- EventHub -------------------------------------------------------------------------------

std::shared_ptr<EventHub::Subscriber> EventHub::subscribe() {
  auto s = std::make_shared<Subscriber>();
  std::lock_guard lock(mutex_);
  subs_.push_back(s);
  return s;
}

void EventHub::unsubscribe(const std::shared_ptr<Subscriber>& s) {
  std::lock_guard lock(mutex_);
  std::erase(subs_, s);
}

void EventHub::publish(cv1::ControllerEvent ev) {
  std::vector<std::shared_ptr<Subscriber>> subs;
  {
    std::lock_guard lock(mutex_);
    ev.set_sequence(++sequence_);
    if (ev.time_unix_ns() == 0) ev.set_time_unix_ns(now_unix_ns());
    recent_.push_back(ev);
    if (recent_.size() > kRecentEvents) recent_.pop_front();
    subs = subs_;
  }
  for (auto& s : subs) {
    {
      std::lock_guard lock(s->mutex);
      if (s->queue.size() >= kSubscriberQueue) continue;  // a slow watcher loses events
      s->queue.push_back(ev);
    }
    s->cv.notify_one();
  }
}

void EventHub::close_all() {
  std::vector<std::shared_ptr<Subscriber>> subs;
  {
    std::lock_guard lock(mutex_);
    subs = subs_;
  }
  for (auto& s : subs) {
    {
      std::lock_guard lock(s->mutex);
      s->closed = true;
    }
    s->cv.notify_all();
  }
}

std::vector<cv1::ControllerEvent> EventHub::recent() const {
  std::lock_guard lock(mutex_);
  return {recent_.begin(), recent_.end()};
}

// ---- Controller -----------------------------------------------------------------------------

Controller::Controller(ControllerOptions options, std::unique_ptr<Planner> planner)
    : options_(std::move(options)), planner_(std::move(planner)) {}

Controller::~Controller() {
  stop();
}

std::unique_ptr<Controller> Controller::create(ControllerOptions options,
                                               std::unique_ptr<Planner> planner,
                                               const cv1::ControllerConfig& config,
                                               std::string& error) {
  std::unique_ptr<Controller> c(new Controller(std::move(options), std::move(planner)));
  c->store_ =
      c->options_.store
          ? c->options_.store
          : std::shared_ptr<Store>(make_local_store(c->options_.state_path, c->options_.id));
  // Every Apply first asks the store whether this replica still holds its lease.
  c->options_.reconcile.may_push = [store = c->store_](uint64_t& term) {
    return store->may_push(term);
  };
  c->topology_links_ = c->planner_->links();
  c->access_links_ = c->planner_->access_links();
  std::set<std::string> known;
  for (const auto& g : c->planner_->gateways()) known.insert(g);
  c->reconciler_ = std::make_unique<Reconciler>(
      c->options_.reconcile, [raw = c.get()](const PassOutcome& o) { raw->on_pass(o); });
  // Endpoints: the topology's agent addresses with the default credentials, then the
  // --gateways file's entries (which win).
  std::map<std::string, cv1::GatewayEndpoint> endpoints;
  for (const auto& [name, agent] : c->planner_->agents()) {
    if (agent.empty()) continue;
    auto& ep = endpoints[name];
    ep.set_name(name);
    ep.set_target(agent);
    ep.set_ca(config.default_ca());
    ep.set_cert(config.default_cert());
    ep.set_key(config.default_key());
    ep.set_tls_server_name(config.default_tls_server_name());
  }
  std::set<std::string> listed;
  for (const auto& e : config.gateways()) {
    if (!known.count(e.name())) {
      error = "gateways[" + e.name() + "]: no gateway of that name in the topology";
      return nullptr;
    }
    if (!listed.insert(e.name()).second) {
      error = "gateways[" + e.name() + "]: listed twice";
      return nullptr;
    }
    auto& ep = endpoints[e.name()];
    const std::string target = ep.target();
    ep.MergeFrom(e);
    if (e.target().empty()) ep.set_target(target);
    if (ep.ca().empty()) ep.set_ca(config.default_ca());
    if (ep.cert().empty()) ep.set_cert(config.default_cert());
    if (ep.key().empty()) ep.set_key(config.default_key());
    if (ep.tls_server_name().empty()) ep.set_tls_server_name(config.default_tls_server_name());
    if (ep.target().empty()) {
      error = "gateways[" + e.name() + "]: no target here nor agent in the topology";
      return nullptr;
    }
  }
  for (const auto& [_, ep] : endpoints) {
    if (!known.count(ep.name())) {
      error = "gateways[" + ep.name() + "]: no gateway of that name in the topology";
      return nullptr;
    }
    if (c->channels_.count(ep.name())) {
      error = "gateways[" + ep.name() + "]: listed twice";
      return nullptr;
    }
    auto ch = make_channel(ep, error);
    if (!ch) return nullptr;
    c->channels_[ep.name()] = ch;
    c->targets_[ep.name()] = ep.target();
    if (ep.has_probe()) c->probe_[ep.name()] = ep.probe();
    c->reconciler_->add_gateway(ep.name(), ch);
  }
  for (const auto& g : known) {
    if (!c->channels_.count(g))
      spdlog::warn("gateway {} of the topology has no endpoint: not managed", g);
  }
  if (!c->load_state(error)) return nullptr;
  return c;
}

bool Controller::load_state(std::string& error) {
  cv1::PersistedState st;
  if (!store_->load(st, error)) return false;
  if (st.format().empty()) return true;  // nothing stored yet
  std::lock_guard lock(mutex_);
  return apply_loaded_locked(st, error);
}

bool Controller::apply_loaded_locked(const cv1::PersistedState& st, std::string& error) {
  if (st.format() != kStateFormat) {
    error = store_->describe() + ": not a controller state (format '" + st.format() + "')";
    return false;
  }
  jobs_.assign(st.jobs().begin(), st.jobs().end());
  overrides_.clear();
  for (const auto& o : st.link_overrides()) {
    if (!topology_links_.count(o.link())) {
      spdlog::warn("state: override of link {} dropped: not in the topology", o.link());
      continue;
    }
    overrides_[o.link()] = o;
  }
  inferred_down_.clear();
  for (const auto& l : st.inferred_down()) {
    if (topology_links_.count(l)) inferred_down_.insert(l);
  }
  plan_version_ = st.plan_version();
  next_job_number_ = std::max<uint64_t>(1, st.next_job_number());
  persisted_topology_version_ = st.topology_version();
  for (const auto& [g, gen] : st.synced_generation()) synced_generation_[g] = gen;
  desired_changed_.clear();
  for (const auto& [g, v] : st.desired_version()) desired_changed_[g] = v;
  if (persisted_topology_version_ != planner_->topology_version()) {
    spdlog::warn("state: the topology changed since the state was written ({} -> {})",
                 persisted_topology_version_, planner_->topology_version());
  }
  spdlog::info("state: {} jobs, {} link overrides, {} links inferred down, plan version {} ({})",
               jobs_.size(), overrides_.size(), inferred_down_.size(), uint64_t(plan_version_),
               store_->describe());
  return true;
}

cv1::PersistedState Controller::state_locked(uint64_t plan_version) const {
  cv1::PersistedState st;
  st.set_format(kStateFormat);
  st.set_topology_version(planner_->topology_version());
  st.set_plan_version(plan_version);
  for (const auto& j : jobs_) *st.add_jobs() = j;
  for (const auto& [_, o] : overrides_) *st.add_link_overrides() = o;
  for (const auto& l : inferred_down_) st.add_inferred_down(l);
  for (const auto& [g, v] : desired_changed_) (*st.mutable_desired_version())[g] = v;
  if (!store_->replicated()) {
    for (const auto& [g, gen] : synced_generation_) (*st.mutable_synced_generation())[g] = gen;
  }
  st.set_next_job_number(next_job_number_);
  return st;
}

void Controller::persist_locked() {
  std::string err;
  if (!store_->commit(state_locked(plan_version_), err)) spdlog::error("state: {}", err);
}

grpc::Status Controller::not_leader_status() const {
  auto l = store_->leadership();
  return {grpc::StatusCode::FAILED_PRECONDITION,
          "not the leader: " + (l.leader.empty()
                                    ? std::string("no leader elected yet, try again")
                                    : "the leader is " + l.leader + " at " + l.leader_address)};
}

std::map<std::string, LinkState> Controller::links_in_force_locked(bool with_inferred) const {
  auto links = topology_links_;
  for (const auto& [name, o] : overrides_) {
    auto& l = links[name];
    l.up = o.up();
    l.capacity_gbps = o.capacity_gbps();
  }
  if (with_inferred) {
    for (const auto& name : inferred_down_) links[name].up = false;
  }
  return links;
}

bool Controller::replan_locked(const std::string& why, std::vector<std::string>* changed,
                               std::string& error) {
  if (!acting_leader_) {
    error = not_leader_status().error_message();
    return false;
  }
  PlanOutput out;
  if (!planner_->compute(links_in_force_locked(true), jobs_, probe_, out, error)) return false;
  // Paths over links in force down stay in their policies at weight 0 (the path algorithm
  // module keeps them): gateways keep probing them, and their probe-up brings the link back.
  std::vector<std::string> diffs;
  for (const auto& [gw, state] : out.gateways) {
    auto it = plan_.gateways.find(gw);
    if (it == plan_.gateways.end() || !(it->second == state)) diffs.push_back(gw);
  }
  const bool first = plan_.gateways.empty() && plan_.paths.empty();
  const uint64_t version = plan_version_ + 1;
  // The store first: a plan that is not stored (this replica lost its lease, another one
  // wrote) is not pushed and changes nothing here.
  auto saved_changed = desired_changed_;
  for (const auto& g : diffs) desired_changed_[g] = version;
  if (!store_->commit(state_locked(version), error)) {
    desired_changed_ = std::move(saved_changed);
    store_refused_ = true;
    return false;
  }
  store_refused_ = false;
  plan_ = std::move(out);
  plan_version_ = version;
  for (const auto& [gw, state] : plan_.gateways) {
    if (!channels_.count(gw)) continue;
    reconciler_->set_desired(gw, std::make_shared<const GatewayState>(state), plan_version_);
  }
  if (changed) *changed = diffs;
  std::string list;
  for (const auto& g : diffs) list += (list.empty() ? "" : ",") + g;
  spdlog::info("plan {}: {}; gateways changed: {}", uint64_t(plan_version_), why,
               first          ? std::string("all (first plan)")
               : list.empty() ? "none"
                              : list);
  publish(cv1::CONTROLLER_EVENT_KIND_PLAN, "", "", why + "; changed: " + list);
  return true;
}

// A follower: the stored state, planned here but not pushed (GetPlan shows it; a takeover
// starts from it).
void Controller::follow() {
  cv1::PersistedState st;
  std::string err;
  if (!store_->load(st, err)) {
    spdlog::warn("follower: {}", err);
    return;
  }
  std::lock_guard lock(mutex_);
  if (acting_leader_) return;
  if (!st.format().empty() && !apply_loaded_locked(st, err)) {
    spdlog::error("follower: {}", err);
    return;
  }
  PlanOutput out;
  if (!planner_->compute(links_in_force_locked(true), jobs_, probe_, out, err)) {
    spdlog::error("follower: plan: {}", err);
    return;
  }
  plan_ = std::move(out);
  for (const auto& [gw, state] : plan_.gateways) {
    if (!channels_.count(gw)) continue;
    reconciler_->set_desired(gw, std::make_shared<const GatewayState>(state), plan_version_);
  }
  publish(cv1::CONTROLLER_EVENT_KIND_PLAN, "", "", "plan from the store (follower)");
}

// Leading: the stored state is read again (another leader may have written since this
// replica last looked), the plan made from it is stored under this replica's term, and
// every gateway is read before anything is pushed: every push carries a generation read
// by this leader.
void Controller::take_over() {
  cv1::PersistedState st;
  std::string err;
  const auto l = store_->leadership();
  if (!store_->load(st, err)) {
    spdlog::error("takeover: {}", err);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    if (!st.format().empty() && !apply_loaded_locked(st, err)) {
      spdlog::error("takeover: {}", err);
      return;
    }
    acting_leader_ = true;
    plan_ = PlanOutput{};  // every gateway's desired state is set again
    if (!replan_locked("took over as leader (term " + std::to_string(l.term) + ")", nullptr, err)) {
      acting_leader_ = false;
      spdlog::error("takeover: {}", err);
      return;
    }
  }
  reconciler_->poke_all();
  reconciler_->set_active(true);
  spdlog::info("leader: {} (term {}), plan {}", options_.id, l.term, plan_version());
  publish(cv1::CONTROLLER_EVENT_KIND_LEADER, "", "",
          "leader " + options_.id + " term " + std::to_string(l.term));
}

void Controller::role_loop() {
  while (!stopping_) {
    {
      std::unique_lock lock(stop_mutex_);
      stop_cv_.wait_for(lock, std::chrono::milliseconds(100), [this] { return stopping_.load(); });
    }
    if (stopping_) break;
    uint64_t term = 0;
    const bool may = store_->may_push(term);
    if (may && !acting_leader_) {
      take_over();
    } else if (!may && acting_leader_) {
      acting_leader_ = false;
      reconciler_->set_active(false);
      spdlog::warn("{}: stepped down: no longer holds the lease", options_.id);
      publish(cv1::CONTROLLER_EVENT_KIND_LEADER, "", "", "stepped down " + options_.id);
    } else if (!acting_leader_ && store_->changed_since_load()) {
      follow();
    }
  }
}

bool Controller::start(std::string& error) {
  if (!store_->replicated()) {
    std::lock_guard lock(mutex_);
    acting_leader_ = true;
    if (!replan_locked("start", nullptr, error)) return false;
    started_ = true;
  } else {
    // Replicas: a follower until the store says this one leads (role_loop).
    reconciler_->set_active(false);
    if (!store_->start(nullptr, error)) return false;
    follow();
    {
      std::lock_guard lock(mutex_);
      started_ = true;
    }
    role_thread_ = std::thread([this] { role_loop(); });
  }
  if (options_.watch) {
    // Every entry first: the threads look theirs up while the map no longer changes.
    for (const auto& [gw, _] : channels_) watchers_[gw] = std::make_unique<Watcher>();
    for (const auto& [gw, ch] : channels_) {
      watchers_[gw]->thread = std::thread([this, gw = gw, ch = ch] { watch_loop(gw, ch); });
    }
  }
  return true;
}

void Controller::stop() {
  if (stopping_.exchange(true)) return;
  { std::lock_guard lock(stop_mutex_); }
  stop_cv_.notify_all();
  for (auto& [_, w] : watchers_) {
    std::lock_guard lock(w->mutex);
    if (w->ctx) w->ctx->TryCancel();
  }
  for (auto& [_, w] : watchers_) {
    if (w->thread.joinable()) w->thread.join();
  }
  if (role_thread_.joinable()) role_thread_.join();
  if (reconciler_) reconciler_->stop();
  if (store_ && store_->replicated()) {
    acting_leader_ = false;
    store_->stop();       // gives the lease back: another replica takes over at once
  } else if (started_) {  // one that never started must not overwrite the file it refused
    std::lock_guard lock(mutex_);
    persist_locked();
  }
  events_.close_all();
}

void Controller::watch_loop(const std::string& gateway, std::shared_ptr<grpc::Channel> channel) {
  auto stub = v1::Gateway::NewStub(channel);
  Watcher& w = *watchers_.at(gateway);
  while (!stopping_) {
    grpc::ClientContext ctx;
    {
      std::lock_guard lock(w.mutex);
      if (stopping_) break;
      w.ctx = &ctx;
    }
    v1::WatchEventsRequest req;
    req.add_kinds(v1::EVENT_KIND_PATH_STATE);
    req.add_kinds(v1::EVENT_KIND_CONFIG_APPLIED);
    auto reader = stub->WatchEvents(&ctx, req);
    v1::Event ev;
    while (reader->Read(&ev)) on_gateway_event(gateway, ev);
    auto st = reader->Finish();
    {
      std::lock_guard lock(w.mutex);
      w.ctx = nullptr;
    }
    bool was_watching = false;
    {
      std::lock_guard lock(mutex_);
      was_watching = watching_[gateway];
      watching_[gateway] = false;
    }
    if (was_watching && !stopping_) {
      spdlog::warn("gateway {}: event stream ended ({}: {})", gateway,
                   status_code_name(st.error_code()), st.error_message());
    }
    std::unique_lock lock(stop_mutex_);
    stop_cv_.wait_for(lock, options_.watch_retry, [this] { return stopping_.load(); });
  }
}

bool Controller::update_inference_locked() {
  std::vector<ProbedPath> probed;
  for (const auto& p : plan_.paths) {
    if (!p.probed) continue;
    auto it = probe_down_.find({p.gateway, p.path_id});
    // A host's access link is never blamed: taking it down moves no traffic (there is no
    // other way to that host) and a false alarm would cut the host off.
    std::vector<std::string> fabric_links;
    for (const auto& l : p.links) {
      if (!access_links_.count(l)) fabric_links.push_back(l);
    }
    probed.push_back(
        {p.gateway, p.path_id, std::move(fabric_links), it != probe_down_.end() && it->second});
  }
  auto inf = infer_failed_links(probed);
  std::string detail;
  for (const auto& [key, down] : probe_down_) {
    if (down) detail += (detail.empty() ? "probes down: " : ", ") + path_key(key.first, key.second);
  }
  if (!inf.unexplained.empty()) {
    std::string u;
    for (const auto& x : inf.unexplained) u += (u.empty() ? "" : ", ") + x;
    spdlog::warn("probe verdicts not explained by a link failure: {}", u);
  }
  if (inf.down == inferred_down_) return false;
  for (const auto& l : inf.down) {
    if (!inferred_down_.count(l)) {
      spdlog::warn("link {} taken down: {}{}", l, detail,
                   inf.ambiguous ? " (links the probes cannot tell apart are taken together)" : "");
      publish(cv1::CONTROLLER_EVENT_KIND_LINK_STATE, "", l, "down (probes): " + detail);
    }
  }
  for (const auto& l : inferred_down_) {
    if (!inf.down.count(l)) {
      spdlog::info("link {} back: its probes answer again", l);
      publish(cv1::CONTROLLER_EVENT_KIND_LINK_STATE, "", l, "up (probes)");
    }
  }
  inferred_down_ = inf.down;
  inference_detail_ = detail;
  return true;
}

void Controller::on_gateway_event(const std::string& gateway, const v1::Event& ev) {
  switch (ev.kind()) {
    case v1::EVENT_KIND_SUBSCRIBED: {
      bool replan = false;
      {
        std::lock_guard lock(mutex_);
        watching_[gateway] = true;
        // A (re)started gateway presumes every path up: forget what its probes said.
        for (auto it = probe_down_.begin(); it != probe_down_.end();) {
          it = it->first.first == gateway ? probe_down_.erase(it) : std::next(it);
        }
        replan = acting_leader_ && update_inference_locked();
        if (replan) {
          std::string err;
          if (!replan_locked("gateway " + gateway + " (re)subscribed", nullptr, err)) {
            spdlog::error("replan: {}", err);
          }
        }
      }
      spdlog::info("gateway {}: watching its events (generation {})", gateway, ev.generation());
      reconciler_->poke(gateway);  // it may have restarted: read what it runs
      break;
    }
    case v1::EVENT_KIND_CONFIG_APPLIED: {
      bool foreign = false;
      {
        std::lock_guard lock(mutex_);
        auto it = synced_generation_.find(gateway);
        foreign = it == synced_generation_.end() || it->second < ev.generation();
      }
      // Not (yet) known as ours: read it back. Our own pushes usually are known already;
      // when the event wins the race the read finds nothing to do. (A follower's reconciler
      // is inactive: the poke only forgets what it thought runs there.)
      if (foreign) reconciler_->poke(gateway);
      break;
    }
    case v1::EVENT_KIND_EVENTS_LOST:
      reconciler_->poke(gateway);
      break;
    case v1::EVENT_KIND_PATH_STATE: {
      const auto& p = ev.path();
      const bool down = p.reason() == "probe-down";
      if (!down && p.reason() != "probe-up") break;  // congestion and operator decisions
      publish(cv1::CONTROLLER_EVENT_KIND_PATH_STATE, gateway, "",
              p.policy() + "/" + p.segment_list() + " path " + std::to_string(p.path_id()) + " " +
                  p.reason(),
              0, ev.time_unix_ns());  // the gateway's time of the verdict
      std::lock_guard lock(mutex_);
      probe_down_[{gateway, p.path_id()}] = down;
      if (acting_leader_ && update_inference_locked()) {
        std::string err;
        if (!replan_locked("probe " + p.reason() + " on " + path_key(gateway, p.path_id()), nullptr,
                           err)) {
          spdlog::error("replan: {}", err);
        }
      }
      break;
    }
    default:
      break;
  }
}

void Controller::on_pass(const PassOutcome& o) {
  // Events first, stamped when the pass ended: they time the gateways, not our bookkeeping.
  if (o.kind == PassOutcome::Kind::pushed) {
    publish(cv1::CONTROLLER_EVENT_KIND_PUSHED, o.gateway, "",
            "plan " + std::to_string(o.version) + ": " + std::to_string(o.changes) +
                " changes in " + std::to_string(o.millis) + " ms",
            o.generation, o.done_unix_ns);
  } else if (o.kind == PassOutcome::Kind::refused || o.kind == PassOutcome::Kind::unreachable) {
    publish(cv1::CONTROLLER_EVENT_KIND_PUSH_FAILED, o.gateway, "",
            std::string(kind_name(o.kind)) + ": " + status_code_name(o.code) + ": " + o.message, 0,
            o.done_unix_ns);
  }
  // The generations our pushes produced are written with the next plan (or at stop), not
  // per push: an fsync per gateway would serialise the passes behind this lock.
  if (o.kind == PassOutcome::Kind::pushed || o.kind == PassOutcome::Kind::in_sync) {
    std::lock_guard lock(mutex_);
    synced_generation_[o.gateway] = o.generation;
  }
}

void Controller::publish(cv1::ControllerEventKind kind, const std::string& gateway,
                         const std::string& link, const std::string& detail, uint64_t generation,
                         uint64_t time_unix_ns) {
  cv1::ControllerEvent ev;
  ev.set_kind(kind);
  ev.set_gateway(gateway);
  ev.set_link(link);
  ev.set_detail(detail);
  ev.set_generation(generation);
  ev.set_plan_version(plan_version_);
  ev.set_time_unix_ns(time_unix_ns);
  events_.publish(std::move(ev));
}

uint64_t Controller::plan_version() const {
  std::lock_guard lock(mutex_);
  return plan_version_;
}

std::set<std::string> Controller::inferred_down() const {
  std::lock_guard lock(mutex_);
  return inferred_down_;
}

grpc::Status Controller::submit_job(const cv1::SubmitJobRequest& req,
                                    cv1::SubmitJobResponse& resp) {
  if (!acting_leader_) return not_leader_status();
  if (auto why = planner_->check_job(req); !why.empty()) {
    return {grpc::StatusCode::INVALID_ARGUMENT, why};
  }
  std::lock_guard lock(mutex_);
  cv1::SubmitJobRequest job = req;
  if (job.job_id().empty()) job.set_job_id("job-" + std::to_string(next_job_number_++));
  for (const auto& j : jobs_) {
    if (j.job_id() == job.job_id()) {
      return {grpc::StatusCode::ALREADY_EXISTS, "job '" + job.job_id() + "' is placed already"};
    }
  }
  jobs_.push_back(job);
  std::string err;
  if (!replan_locked("job " + job.job_id() + " submitted", nullptr, err)) {
    jobs_.pop_back();
    // Not stored: the job is nowhere (no replica will place it); the submitter may retry.
    if (store_refused_ || !acting_leader_) {
      return {grpc::StatusCode::UNAVAILABLE, "job " + job.job_id() + " not placed: " + err};
    }
    return {grpc::StatusCode::INVALID_ARGUMENT, err};
  }
  resp.set_job_id(job.job_id());
  resp.set_plan_version(plan_version_);
  if (auto it = plan_.jobs.find(job.job_id()); it != plan_.jobs.end()) {
    *resp.mutable_placements() = it->second.placements();
    resp.set_max_link_load(it->second.max_link_load());
    resp.set_lower_bound(it->second.lower_bound());
  }
  publish(cv1::CONTROLLER_EVENT_KIND_JOB, "", "",
          "job " + job.job_id() + " placed: " + std::to_string(job.flows_size()) + " flows");
  return grpc::Status::OK;
}

grpc::Status Controller::cancel_job(const cv1::CancelJobRequest& req,
                                    cv1::CancelJobResponse& resp) {
  if (!acting_leader_) return not_leader_status();
  std::lock_guard lock(mutex_);
  auto it = std::find_if(jobs_.begin(), jobs_.end(),
                         [&](const auto& j) { return j.job_id() == req.job_id(); });
  if (it == jobs_.end()) return {grpc::StatusCode::NOT_FOUND, "no job '" + req.job_id() + "'"};
  auto saved = *it;
  jobs_.erase(it);
  std::string err;
  if (!replan_locked("job " + req.job_id() + " cancelled", nullptr, err)) {
    jobs_.push_back(saved);
    return {grpc::StatusCode::INTERNAL, err};
  }
  resp.set_plan_version(plan_version_);
  publish(cv1::CONTROLLER_EVENT_KIND_JOB, "", "", "job " + req.job_id() + " cancelled");
  return grpc::Status::OK;
}

grpc::Status Controller::set_link_state(const cv1::SetLinkStateRequest& req,
                                        cv1::SetLinkStateResponse& resp) {
  if (!acting_leader_) return not_leader_status();
  std::lock_guard lock(mutex_);
  auto topo = topology_links_.find(req.link());
  if (topo == topology_links_.end()) {
    return {grpc::StatusCode::NOT_FOUND, "link: no link '" + req.link() + "' in the topology"};
  }
  if (req.has_capacity_gbps() && !(req.capacity_gbps() > 0)) {
    return {grpc::StatusCode::INVALID_ARGUMENT, "capacity_gbps: must be > 0 (use up: false)"};
  }
  auto saved = overrides_;
  if (req.clear()) {
    overrides_.erase(req.link());
  } else {
    auto& o = overrides_[req.link()];
    if (o.link().empty()) {
      o.set_link(req.link());
      o.set_up(topo->second.up);
      o.set_capacity_gbps(topo->second.capacity_gbps);
    }
    if (req.has_up()) o.set_up(req.up());
    if (req.has_capacity_gbps()) o.set_capacity_gbps(req.capacity_gbps());
    o.set_origin(cv1::LINK_ORIGIN_OPERATOR);
  }
  std::vector<std::string> changed;
  std::string err;
  if (!replan_locked("link " + req.link() + " set by operator", &changed, err)) {
    overrides_ = saved;
    return {store_refused_ ? grpc::StatusCode::UNAVAILABLE : grpc::StatusCode::FAILED_PRECONDITION,
            err};
  }
  auto links = links_in_force_locked(true);
  auto* l = resp.mutable_link();
  l->set_link(req.link());
  l->set_up(links[req.link()].up);
  l->set_capacity_gbps(links[req.link()].capacity_gbps);
  l->set_origin(overrides_.count(req.link()) ? cv1::LINK_ORIGIN_OPERATOR
                                             : cv1::LINK_ORIGIN_TOPOLOGY);
  resp.set_plan_version(plan_version_);
  for (auto& g : changed) resp.add_gateways_changed(g);
  publish(cv1::CONTROLLER_EVENT_KIND_LINK_STATE, "", req.link(),
          std::string(l->up() ? "up" : "down") + " (operator), capacity " +
              std::to_string(l->capacity_gbps()) + " Gbit/s");
  return grpc::Status::OK;
}

void Controller::get_plan(const cv1::GetPlanRequest& req, cv1::Plan& plan) const {
  const auto leadership = store_->leadership();
  plan.set_leader(leadership.leader);
  plan.set_is_leader(acting_leader_ && leadership.is_leader);
  plan.set_leader_term(leadership.term);
  std::lock_guard lock(mutex_);
  plan.set_version(plan_version_);
  plan.set_topology_version(planner_->topology_version());
  auto links = links_in_force_locked(true);
  for (const auto& [name, l] : links) {
    const bool op = overrides_.count(name) > 0;
    const bool inferred = inferred_down_.count(name) > 0;
    if (!req.include_objects() && !op && !inferred) continue;
    auto* s = plan.add_links();
    s->set_link(name);
    s->set_up(l.up);
    s->set_capacity_gbps(l.capacity_gbps);
    s->set_origin(inferred ? cv1::LINK_ORIGIN_PROBES
                  : op     ? cv1::LINK_ORIGIN_OPERATOR
                           : cv1::LINK_ORIGIN_TOPOLOGY);
    if (inferred) s->set_detail(inference_detail_);
  }
  for (const auto& [_, j] : plan_.jobs) *plan.add_jobs() = j;
  for (const auto& r : reconciler_->report()) {
    if (!req.gateway().empty() && r.name != req.gateway()) continue;
    auto* g = plan.add_gateways();
    g->set_name(r.name);
    if (auto t = targets_.find(r.name); t != targets_.end()) g->set_target(t->second);
    g->set_desired_version(r.desired_version);
    g->set_synced_version(r.synced_version);
    g->set_generation(r.generation);
    g->set_in_sync(r.in_sync);
    g->set_reachable(r.reachable);
    g->set_last_error(r.last_error);
    auto w = watching_.find(r.name);
    g->set_watching(w != watching_.end() && w->second);
    auto* c = g->mutable_counters();
    c->set_pushes(r.pushes);
    c->set_push_failures(r.push_failures);
    c->set_stale_retries(r.stale_retries);
    c->set_unreachable(r.unreachable);
    c->set_reconciles(r.reconciles);
    c->set_changes_pushed(r.changes_pushed);
    c->set_lag_ms(r.lag_ms);
    c->set_last_push_ms(r.last_push_ms);
    if (r.desired) {
      g->set_policies(uint32_t(r.desired->policies.size()));
      g->set_steering_rules(uint32_t(r.desired->steering.size()));
      g->set_local_sids(uint32_t(r.desired->local_sids.size()));
      if (req.include_objects()) {
        for (const auto& [_, p] : r.desired->policies) *g->add_desired_policies() = p;
        for (const auto& [_, x] : r.desired->steering) *g->add_desired_steering() = x;
        for (const auto& [_, s] : r.desired->local_sids) *g->add_desired_local_sids() = s;
      }
    }
  }
}

// ---- service --------------------------------------------------------------------------------

grpc::Status ControllerService::SubmitJob(grpc::ServerContext*, const cv1::SubmitJobRequest* req,
                                          cv1::SubmitJobResponse* resp) {
  return c_.submit_job(*req, *resp);
}

grpc::Status ControllerService::CancelJob(grpc::ServerContext*, const cv1::CancelJobRequest* req,
                                          cv1::CancelJobResponse* resp) {
  return c_.cancel_job(*req, *resp);
}

grpc::Status ControllerService::GetPlan(grpc::ServerContext*, const cv1::GetPlanRequest* req,
                                        cv1::Plan* resp) {
  c_.get_plan(*req, *resp);
  return grpc::Status::OK;
}

grpc::Status ControllerService::SetLinkState(grpc::ServerContext*,
                                             const cv1::SetLinkStateRequest* req,
                                             cv1::SetLinkStateResponse* resp) {
  return c_.set_link_state(*req, *resp);
}

grpc::Status ControllerService::Watch(grpc::ServerContext* ctx, const cv1::WatchRequest*,
                                      grpc::ServerWriter<cv1::ControllerEvent>* writer) {
  auto sub = c_.events().subscribe();
  cv1::ControllerEvent first;
  first.set_kind(cv1::CONTROLLER_EVENT_KIND_SUBSCRIBED);
  first.set_plan_version(c_.plan_version());
  first.set_time_unix_ns(now_unix_ns());
  bool ok = writer->Write(first);
  while (ok && !ctx->IsCancelled()) {
    std::deque<cv1::ControllerEvent> batch;
    {
      std::unique_lock lock(sub->mutex);
      sub->cv.wait_for(lock, std::chrono::milliseconds(200),
                       [&] { return sub->closed || !sub->queue.empty(); });
      if (sub->closed && sub->queue.empty()) break;
      batch.swap(sub->queue);
    }
    for (const auto& ev : batch) {
      if (!(ok = writer->Write(ev))) break;
    }
  }
  c_.events().unsubscribe(sub);
  return grpc::Status::OK;
}

}  // namespace srv6gw::sr_controller
