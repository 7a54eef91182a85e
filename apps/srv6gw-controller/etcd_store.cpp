// SPDX-License-Identifier: BSD-3-Clause
#include "etcd_store.hpp"

#include <google/protobuf/util/json_util.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <set>

namespace srv6gw::sr_controller {
namespace {

using etcdserverpb::Compare;

constexpr const char* kFormat = "srv6gw-controller-state/1";

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string to_json(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, o);
  return out;
}

bool from_json(const std::string& text, google::protobuf::Message& m) {
  return google::protobuf::util::JsonStringToMessage(text, &m).ok();
}

// The smallest key after every key that starts with `prefix`.
std::string prefix_end(std::string prefix) {
  while (!prefix.empty()) {
    if (static_cast<unsigned char>(prefix.back()) < 0xff) {
      prefix.back() = char(static_cast<unsigned char>(prefix.back()) + 1);
      return prefix;
    }
    prefix.pop_back();
  }
  return std::string(1, '\0');
}

void put(etcdserverpb::TxnRequest& t, const std::string& k, const std::string& v,
         int64_t lease = 0) {
  auto* p = t.add_success()->mutable_request_put();
  p->set_key(k);
  p->set_value(v);
  p->set_lease(lease);
}

void del(etcdserverpb::TxnRequest& t, const std::string& k) {
  t.add_success()->mutable_request_delete_range()->set_key(k);
}

constexpr unsigned kGatewayShards = 64;

// FNV-1a: the same shard for a gateway in every replica and every build.
unsigned shard_of(const std::string& gateway) {
  uint32_t h = 2166136261u;
  for (unsigned char c : gateway) h = (h ^ c) * 16777619u;
  return h % kGatewayShards;
}

std::string status_text(const grpc::Status& st) {
  return "etcd: " + std::to_string(int(st.error_code())) + " " + st.error_message();
}

}  // namespace

std::unique_ptr<EtcdStore> EtcdStore::create(EtcdStoreOptions options, std::string& error) {
  std::unique_ptr<EtcdStore> s(new EtcdStore());
  if (options.prefix.empty() || options.prefix.back() != '/') options.prefix += '/';
  s->options_ = std::move(options);
  s->client_ = EtcdClient::create(s->options_.etcd, error);
  if (!s->client_) return nullptr;
  return s;
}

EtcdStore::~EtcdStore() {
  stop();
}

std::string EtcdStore::describe() const {
  std::string eps;
  for (const auto& e : options_.etcd.endpoints) eps += (eps.empty() ? "" : ",") + e;
  return "etcd://" + eps + " prefix " + options_.prefix;
}

bool EtcdStore::load(cv1::PersistedState& out, std::string& error) {
  etcdserverpb::RangeRequest req;
  req.set_key(options_.prefix);
  req.set_range_end(prefix_end(options_.prefix));
  etcdserverpb::RangeResponse resp;
  auto st = client_->range(req, resp);
  if (!st.ok()) {
    error = status_text(st);
    return false;
  }
  out.Clear();
  std::vector<cv1::StoredJob> jobs;
  int64_t meta_revision = 0;
  for (const auto& kv : resp.kvs()) {
    const std::string k = kv.key().substr(options_.prefix.size());
    if (k == "meta") {
      cv1::PersistedState meta;
      if (!from_json(kv.value(), meta) || meta.format() != kFormat) {
        error = key(k) + ": not a controller state (format '" + meta.format() + "')";
        return false;
      }
      meta_revision = kv.mod_revision();
      out.set_format(meta.format());
      out.set_topology_version(meta.topology_version());
      out.set_plan_version(meta.plan_version());
      out.set_next_job_number(meta.next_job_number());
      *out.mutable_inferred_down() = meta.inferred_down();
    } else if (k.rfind("jobs/", 0) == 0) {
      cv1::StoredJob j;
      if (!from_json(kv.value(), j)) {
        error = key(k) + ": not a StoredJob";
        return false;
      }
      jobs.push_back(std::move(j));
    } else if (k.rfind("links/", 0) == 0) {
      cv1::LinkStatus l;
      if (!from_json(kv.value(), l)) {
        error = key(k) + ": not a LinkStatus";
        return false;
      }
      *out.add_link_overrides() = l;
    } else if (k.rfind("gateways/", 0) == 0) {
      cv1::PersistedState part;
      if (!from_json(kv.value(), part)) {
        error = key(k) + ": not a desired-version shard";
        return false;
      }
      for (const auto& [gw, v] : part.desired_version()) (*out.mutable_desired_version())[gw] = v;
    }
  }
  std::sort(jobs.begin(), jobs.end(),
            [](const auto& a, const auto& b) { return a.sequence() < b.sequence(); });
  std::lock_guard lock(mutex_);
  job_sequence_.clear();
  next_sequence_ = 1;
  for (auto& j : jobs) {
    job_sequence_[j.job().job_id()] = j.sequence();
    next_sequence_ = std::max(next_sequence_, j.sequence() + 1);
    *out.add_jobs() = std::move(*j.mutable_job());
  }
  meta_revision_ = meta_revision;
  last_ = out;
  return true;
}

bool EtcdStore::commit(const cv1::PersistedState& st, std::string& error) {
  std::lock_guard lock(mutex_);
  etcdserverpb::TxnRequest t;
  // Guard 1: nobody wrote the state since this replica read or wrote it.
  auto* c = t.add_compare();
  c->set_key(key("meta"));
  c->set_target(Compare::MOD);
  c->set_result(Compare::EQUAL);
  c->set_mod_revision(meta_revision_);
  // Guard 2: this replica still leads (its leader key, by create revision = term).
  const uint64_t term = term_.load();
  if (!leader_ || term == 0) {
    error = "not the leader";
    return false;
  }
  auto* g = t.add_compare();
  g->set_key(key("leader"));
  g->set_target(Compare::CREATE);
  g->set_result(Compare::EQUAL);
  g->set_create_revision(int64_t(term));

  cv1::PersistedState meta;
  meta.set_format(kFormat);
  meta.set_topology_version(st.topology_version());
  meta.set_plan_version(st.plan_version());
  meta.set_next_job_number(st.next_job_number());
  *meta.mutable_inferred_down() = st.inferred_down();
  put(t, key("meta"), to_json(meta));
  // Jobs: new ones get the next sequence numbers, in the order given.
  std::map<std::string, const cv1::SubmitJobRequest*> old_jobs, new_jobs;
  for (const auto& j : last_.jobs()) old_jobs[j.job_id()] = &j;
  auto sequences = job_sequence_;
  uint64_t next_sequence = next_sequence_;
  for (const auto& j : st.jobs()) {
    new_jobs[j.job_id()] = &j;
    if (old_jobs.count(j.job_id())) continue;
    cv1::StoredJob sj;
    sj.set_sequence(next_sequence);
    sequences[j.job_id()] = next_sequence++;
    *sj.mutable_job() = j;
    put(t, key("jobs/" + j.job_id()), to_json(sj));
  }
  for (const auto& [id, _] : old_jobs) {
    if (!new_jobs.count(id)) {
      del(t, key("jobs/" + id));
      sequences.erase(id);
    }
  }
  std::map<std::string, std::string> old_links, new_links;
  for (const auto& l : last_.link_overrides()) old_links[l.link()] = to_json(l);
  for (const auto& l : st.link_overrides()) new_links[l.link()] = to_json(l);
  for (const auto& [name, v] : new_links) {
    auto it = old_links.find(name);
    if (it == old_links.end() || it->second != v) put(t, key("links/" + name), v);
  }
  for (const auto& [name, _] : old_links) {
    if (!new_links.count(name)) del(t, key("links/" + name));
  }
  // Desired versions in kGatewayShards keys: a change rewrites the shards of the gateways it
  // changed (at most kGatewayShards keys, under etcd's 128 operations per transaction).
  std::set<unsigned> shards;
  for (const auto& [gw, v] : st.desired_version()) {
    auto it = last_.desired_version().find(gw);
    if (it == last_.desired_version().end() || it->second != v) shards.insert(shard_of(gw));
  }
  for (const auto& [gw, _] : last_.desired_version()) {
    if (!st.desired_version().count(gw)) shards.insert(shard_of(gw));
  }
  for (unsigned shard : shards) {
    cv1::PersistedState part;
    for (const auto& [gw, v] : st.desired_version()) {
      if (shard_of(gw) == shard) (*part.mutable_desired_version())[gw] = v;
    }
    put(t, key("gateways/" + std::to_string(shard)), to_json(part));
  }
  etcdserverpb::TxnResponse resp;
  auto s = client_->txn(t, resp);
  if (!s.ok()) {
    error = status_text(s);
    return false;
  }
  if (!resp.succeeded()) {
    error = "etcd: transaction refused: the desired state changed since revision " +
            std::to_string(meta_revision_) + " or this replica's leader key (term " +
            std::to_string(term) + ") is gone";
    return false;
  }
  meta_revision_ = resp.header().revision();
  ++counters_.commits;
  counters_.keys_written += uint64_t(t.success_size());
  last_ = st;
  last_.clear_synced_generation();
  job_sequence_ = std::move(sequences);
  next_sequence_ = next_sequence;
  return true;
}

bool EtcdStore::changed_since_load() {
  if (watching_.load() && !recheck_.exchange(false)) {
    std::lock_guard lock(mutex_);
    return meta_seen_revision_.load() > meta_revision_;
  }
  etcdserverpb::RangeRequest req;
  req.set_key(key("meta"));
  etcdserverpb::RangeResponse resp;
  if (!client_->range(req, resp).ok()) return false;
  const int64_t rev = resp.kvs_size() ? resp.kvs(0).mod_revision() : 0;
  std::lock_guard lock(mutex_);
  return rev != meta_revision_;
}

bool EtcdStore::start(std::function<void(const Leadership&)> on_change, std::string& error) {
  // Reachable at all? A clear error at start beats a replica that silently never leads;
  // etcd starting at the same time (a machine booting) is given 10 s.
  etcdserverpb::RangeRequest req;
  req.set_key(key("leader"));
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (true) {
    etcdserverpb::RangeResponse resp;
    auto st = client_->range(req, resp);
    if (st.ok()) break;
    if (std::chrono::steady_clock::now() >= give_up) {
      error = describe() + ": " + status_text(st);
      return false;
    }
    spdlog::warn("{}: {}; trying again", describe(), status_text(st));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  on_change_ = std::move(on_change);
  thread_ = std::thread([this] { run(); });
  watch_thread_ = std::thread([this] { watch_meta(); });
  return true;
}

// Keeps a watch on meta open; after a failure, waits half a second and watches again on the
// next endpoint.
void EtcdStore::watch_meta() {
  for (size_t attempt = 0;; ++attempt) {
    grpc::ClientContext ctx;
    {
      std::lock_guard slock(stop_mutex_);
      if (stopping_) return;
      std::lock_guard lock(watch_mutex_);
      watch_ctx_ = &ctx;
    }
    auto st = client_->watch(key("meta"), attempt, ctx, [this](const auto& resp) {
      if (resp.created()) {
        recheck_ = true;  // before watching_: the first check after it reads etcd
        watching_ = true;
        spdlog::info("etcd: watching {} (revision {})", key("meta"), resp.header().revision());
      }
      for (const auto& ev : resp.events()) {
        int64_t seen = meta_seen_revision_.load();
        while (ev.kv().mod_revision() > seen &&
               !meta_seen_revision_.compare_exchange_weak(seen, ev.kv().mod_revision())) {
        }
      }
    });
    watching_ = false;
    {
      std::lock_guard lock(watch_mutex_);
      watch_ctx_ = nullptr;
    }
    std::unique_lock slock(stop_mutex_);
    if (stopping_) return;
    spdlog::warn("etcd: watch on {} ended: {}; watching again", key("meta"), status_text(st));
    stop_cv_.wait_for(slock, std::chrono::milliseconds(500), [this] { return stopping_; });
  }
}

void EtcdStore::stop() {
  {
    std::lock_guard lock(stop_mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  stop_cv_.notify_all();
  {
    std::lock_guard lock(watch_mutex_);
    if (watch_ctx_) watch_ctx_->TryCancel();
  }
  if (thread_.joinable()) thread_.join();
  if (watch_thread_.joinable()) watch_thread_.join();
  // Hand over at once instead of letting the others wait out the lease.
  int64_t lease = 0;
  {
    std::lock_guard lock(mutex_);
    lease = lease_id_;
  }
  leader_ = false;
  if (lease) (void)client_->lease_revoke(lease);
}

Leadership EtcdStore::leadership() const {
  Leadership l;
  uint64_t term = 0;
  l.is_leader = may_push(term);
  l.term = l.is_leader ? term : 0;
  std::lock_guard lock(mutex_);
  l.leader = leader_id_;
  l.leader_address = leader_address_;
  return l;
}

bool EtcdStore::may_push(uint64_t& term) const {
  if (!leader_.load()) return false;
  term = term_.load();
  return steady_ns() < valid_until_ns_.load();
}

void EtcdStore::notify() {
  if (on_change_) on_change_(leadership());
}

void EtcdStore::step_down(const std::string& why) {
  if (!leader_.exchange(false)) return;
  spdlog::warn("etcd: no longer leader (term {}): {}", term_.load(), why);
  {
    std::lock_guard lock(mutex_);
    leader_id_.clear();
    leader_address_.clear();
  }
  notify();
}

// Lease upkeep and campaign, every TTL/4: keep the lease alive (its life known locally as
// "sent + TTL": etcd counts from when it received the keep-alive, later), step down the
// moment that life ends, and try to create the leader key when there is none.
void EtcdStore::run() {
  const auto ttl = options_.lease_ttl;
  const auto period = std::chrono::milliseconds(std::max<int64_t>(
      50, std::chrono::duration_cast<std::chrono::milliseconds>(ttl).count() / 4));
  cv1::LeaderRecord me;
  me.set_id(options_.id);
  me.set_address(options_.address);
  while (true) {
    {
      std::unique_lock lock(stop_mutex_);
      if (stopping_) break;
    }
    // A replica that was paused wakes here first: its lease may be long gone.
    if (leader_ && steady_ns() >= valid_until_ns_) step_down("lease expired locally");
    int64_t lease = 0;
    {
      std::lock_guard lock(mutex_);
      lease = lease_id_;
    }
    const int64_t sent = steady_ns();
    if (lease == 0) {
      int64_t id = 0, granted = 0;
      if (auto st = client_->lease_grant(ttl.count(), id, granted); st.ok()) {
        std::lock_guard lock(mutex_);
        lease_id_ = lease = id;
        valid_until_ns_ = sent + granted * 1000000000LL;
      } else {
        spdlog::warn("etcd: lease grant: {}", status_text(st));
      }
    } else {
      int64_t left = 0;
      auto st = client_->lease_keep_alive(lease, left);
      if (st.ok() && left > 0) {
        valid_until_ns_ = sent + left * 1000000000LL;
      } else if (st.ok()) {
        step_down("lease " + std::to_string(lease) + " expired in etcd");
        std::lock_guard lock(mutex_);
        lease_id_ = lease = 0;
      } else {
        spdlog::warn("etcd: keep-alive: {}", status_text(st));
      }
    }
    if (lease != 0) {
      // Campaign (or learn who leads): create the leader key if absent, else read it.
      etcdserverpb::TxnRequest t;
      auto* c = t.add_compare();
      c->set_key(key("leader"));
      c->set_target(Compare::CREATE);
      c->set_result(Compare::EQUAL);
      c->set_create_revision(0);
      put(t, key("leader"), to_json(me), lease);
      t.add_failure()->mutable_request_range()->set_key(key("leader"));
      etcdserverpb::TxnResponse resp;
      if (auto st = client_->txn(t, resp); st.ok()) {
        cv1::LeaderRecord who;
        uint64_t term = 0;
        int64_t who_lease = 0;
        if (resp.succeeded()) {
          who = me;
          term = uint64_t(resp.header().revision());
          who_lease = lease;
        } else if (resp.responses_size() && resp.responses(0).response_range().kvs_size()) {
          const auto& kv = resp.responses(0).response_range().kvs(0);
          (void)from_json(kv.value(), who);
          term = uint64_t(kv.create_revision());
          who_lease = kv.lease();
        }
        const bool mine = who_lease == lease && term != 0;
        bool changed = false;
        {
          std::lock_guard lock(mutex_);
          changed = leader_id_ != who.id() || (mine && (!leader_ || term_ != term));
          leader_id_ = who.id();
          leader_address_ = who.address();
        }
        if (mine && steady_ns() < valid_until_ns_) {
          if (!leader_ || term_ != term) {
            term_ = term;
            leader_ = true;
            spdlog::info("etcd: leader (term {}, lease {:x}, TTL {} s)", term, lease, ttl.count());
            notify();
          }
        } else if (leader_) {
          step_down("the leader key is " + who.id() + "'s");
        } else if (changed) {
          notify();
        }
      }
    }
    std::unique_lock lock(stop_mutex_);
    stop_cv_.wait_for(lock, period, [this] { return stopping_; });
  }
}

}  // namespace srv6gw::sr_controller
