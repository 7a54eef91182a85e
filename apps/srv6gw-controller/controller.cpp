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

// Whole-file write that a crash leaves old or new, never half: temp file, fsync, rename.
bool write_file_atomically(const std::string& path, const std::string& data, std::string& error) {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    error = "cannot write " + tmp + ": " + std::strerror(errno);
    return false;
  }
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      error = "cannot write " + tmp + ": " + std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return false;
    }
    off += size_t(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    error = "cannot write " + tmp + ": " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    error = "cannot rename " + tmp + " to " + path + ": " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
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
  if (options_.state_path.empty() || !std::filesystem::exists(options_.state_path)) return true;
  std::ifstream in(options_.state_path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  cv1::PersistedState st;
  auto status = google::protobuf::util::JsonStringToMessage(s.str(), &st);
  if (!status.ok() || st.format() != kStateFormat) {
    error = options_.state_path + ": not a controller state file (" +
            (status.ok() ? "format '" + st.format() + "'" : std::string(status.message())) + ")";
    return false;
  }
  jobs_.assign(st.jobs().begin(), st.jobs().end());
  for (const auto& o : st.link_overrides()) {
    if (!topology_links_.count(o.link())) {
      spdlog::warn("state: override of link {} dropped: not in the topology", o.link());
      continue;
    }
    overrides_[o.link()] = o;
  }
  plan_version_ = st.plan_version();
  next_job_number_ = std::max<uint64_t>(1, st.next_job_number());
  persisted_topology_version_ = st.topology_version();
  for (const auto& [g, gen] : st.synced_generation()) synced_generation_[g] = gen;
  if (persisted_topology_version_ != planner_->topology_version()) {
    spdlog::warn("state: the topology changed since the state was written ({} -> {})",
                 persisted_topology_version_, planner_->topology_version());
  }
  spdlog::info("state: restored {} jobs, {} link overrides, plan version {}", jobs_.size(),
               overrides_.size(), plan_version_);
  return true;
}

void Controller::persist_locked() {
  if (options_.state_path.empty()) return;
  cv1::PersistedState st;
  st.set_format(kStateFormat);
  st.set_topology_version(planner_->topology_version());
  st.set_plan_version(plan_version_);
  for (const auto& j : jobs_) *st.add_jobs() = j;
  for (const auto& [_, o] : overrides_) *st.add_link_overrides() = o;
  for (const auto& r : reconciler_->report()) {
    (*st.mutable_desired_version())[r.name] = r.desired_version;
  }
  for (const auto& [g, gen] : synced_generation_) (*st.mutable_synced_generation())[g] = gen;
  st.set_next_job_number(next_job_number_);
  std::string json;
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = true;
  opts.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(st, &json, opts);
  std::string err;
  if (!write_file_atomically(options_.state_path, json, err)) spdlog::error("state: {}", err);
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
  plan_ = std::move(out);
  ++plan_version_;
  for (const auto& [gw, state] : plan_.gateways) {
    if (!channels_.count(gw)) continue;
    reconciler_->set_desired(gw, std::make_shared<const GatewayState>(state), plan_version_);
  }
  if (changed) *changed = diffs;
  std::string list;
  for (const auto& g : diffs) list += (list.empty() ? "" : ",") + g;
  spdlog::info("plan {}: {}; gateways changed: {}", plan_version_, why,
               first          ? std::string("all (first plan)")
               : list.empty() ? "none"
                              : list);
  persist_locked();
  publish(cv1::CONTROLLER_EVENT_KIND_PLAN, "", "", why + "; changed: " + list);
  return true;
}

bool Controller::start(std::string& error) {
  {
    std::lock_guard lock(mutex_);
    if (!replan_locked("start", nullptr, error)) return false;
    started_ = true;
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
  if (reconciler_) reconciler_->stop();
  if (started_) {  // a controller that never started must not overwrite the file it refused
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
        replan = update_inference_locked();
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
      // when the event wins the race the read finds nothing to do.
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
      if (update_inference_locked()) {
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
    return {grpc::StatusCode::FAILED_PRECONDITION, err};
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
