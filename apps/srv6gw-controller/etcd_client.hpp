// SPDX-License-Identifier: BSD-3-Clause
// A small client of etcd's v3 gRPC API (etcdserverpb.KV and Lease, generated at build time
// from the .proto files Debian installs: apps/srv6gw-controller/etcdpb), and its Watch
// service. Several endpoints: a call that finds one unavailable moves to the next.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "etcd/etcdserver/etcdserverpb/rpc.grpc.pb.h"

namespace srv6gw::sr_controller {

struct EtcdOptions {
  std::vector<std::string> endpoints;  // HOST:PORT
  std::string ca, cert, key;           // TLS when ca is set (cert+key: client certificate)
  std::string tls_server_name;
  std::chrono::milliseconds call_timeout{1000};
};

// "etcd://h1:2379,h2:2379" -> endpoints; false with `error` on another form.
bool parse_etcd_url(const std::string& url, std::vector<std::string>& endpoints,
                    std::string& error);

class EtcdClient {
 public:
  static std::unique_ptr<EtcdClient> create(const EtcdOptions& options, std::string& error);

  grpc::Status range(const etcdserverpb::RangeRequest& req, etcdserverpb::RangeResponse& resp);
  grpc::Status txn(const etcdserverpb::TxnRequest& req, etcdserverpb::TxnResponse& resp);
  grpc::Status lease_grant(int64_t ttl_s, int64_t& id, int64_t& granted_ttl_s);
  grpc::Status lease_revoke(int64_t id);
  // One keep-alive round trip; `ttl_s` 0 = the lease is gone.
  grpc::Status lease_keep_alive(int64_t id, int64_t& ttl_s);

  // Watches one key from now on: `on_response` gets every WatchResponse (the first one says
  // the watch is created, then one per batch of events) until the stream ends: `ctx`
  // cancelled (TryCancel from another thread: how the caller stops it), etcd gone or the
  // watch cancelled by etcd. Blocks until then and returns how the stream ended. `attempt`
  // picks the endpoint (the current one, then the next ones), so a caller that watches again
  // after a failure moves on to another member.
  grpc::Status watch(const std::string& key, size_t attempt, grpc::ClientContext& ctx,
                     const std::function<void(const etcdserverpb::WatchResponse&)>& on_response);

  uint64_t txns() const { return txns_.load(); }

 private:
  struct Endpoint {
    std::string target;
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<etcdserverpb::KV::Stub> kv;
    std::unique_ptr<etcdserverpb::Lease::Stub> lease;
    std::unique_ptr<etcdserverpb::Watch::Stub> watch;
  };
  template <class Call>
  grpc::Status call(Call&& c);
  EtcdOptions options_;
  std::vector<Endpoint> endpoints_;
  std::atomic<size_t> current_{0};
  std::atomic<uint64_t> txns_{0};
};

}  // namespace srv6gw::sr_controller
