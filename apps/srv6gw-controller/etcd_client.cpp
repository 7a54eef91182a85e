// SPDX-License-Identifier: BSD-3-Clause
#include "etcd_client.hpp"

#include <sstream>

#include "agent/client_channel.hpp"

namespace srv6gw::sr_controller {

using agent::read_pem;

bool parse_etcd_url(const std::string& url, std::vector<std::string>& endpoints,
                    std::string& error) {
  const std::string scheme = "etcd://";
  if (url.rfind(scheme, 0) != 0) {
    error = "--store: '" + url + "' is not etcd://HOST:PORT[,HOST:PORT...]";
    return false;
  }
  std::string rest = url.substr(scheme.size());
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  std::stringstream s(rest);
  std::string ep;
  while (std::getline(s, ep, ',')) {
    if (ep.empty() || ep.find(':') == std::string::npos) {
      error = "--store: endpoint '" + ep + "' is not HOST:PORT";
      return false;
    }
    endpoints.push_back(ep);
  }
  if (endpoints.empty()) {
    error = "--store: no endpoint in '" + url + "'";
    return false;
  }
  return true;
}

std::unique_ptr<EtcdClient> EtcdClient::create(const EtcdOptions& options, std::string& error) {
  auto c = std::make_unique<EtcdClient>();
  c->options_ = options;
  std::shared_ptr<grpc::ChannelCredentials> creds;
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  if (options.ca.empty()) {
    if (!options.cert.empty()) {
      error = "--etcd-cert needs --etcd-ca";
      return nullptr;
    }
    creds = grpc::InsecureChannelCredentials();
  } else {
    grpc::SslCredentialsOptions ssl;
    if (!read_pem(options.ca, ssl.pem_root_certs, error)) return nullptr;
    if (options.cert.empty() != options.key.empty()) {
      error = "--etcd-cert and --etcd-key go together";
      return nullptr;
    }
    if (!options.cert.empty()) {
      if (!read_pem(options.cert, ssl.pem_cert_chain, error)) return nullptr;
      if (!read_pem(options.key, ssl.pem_private_key, error)) return nullptr;
    }
    if (!options.tls_server_name.empty()) args.SetSslTargetNameOverride(options.tls_server_name);
    creds = grpc::SslCredentials(ssl);
  }
  for (const auto& t : options.endpoints) {
    Endpoint e;
    e.target = t;
    e.channel = grpc::CreateCustomChannel(t, creds, args);
    e.kv = etcdserverpb::KV::NewStub(e.channel);
    e.lease = etcdserverpb::Lease::NewStub(e.channel);
    e.watch = etcdserverpb::Watch::NewStub(e.channel);
    c->endpoints_.push_back(std::move(e));
  }
  return c;
}

// The call on the current endpoint; on UNAVAILABLE the next ones, each once.
template <class Call>
grpc::Status EtcdClient::call(Call&& c) {
  grpc::Status st;
  const size_t n = endpoints_.size();
  size_t start = current_.load();
  for (size_t i = 0; i < n; ++i) {
    const size_t k = (start + i) % n;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + options_.call_timeout);
    st = c(endpoints_[k], ctx);
    if (st.error_code() != grpc::StatusCode::UNAVAILABLE) {
      current_ = k;
      return st;
    }
  }
  current_ = (start + 1) % n;
  return st;
}

grpc::Status EtcdClient::range(const etcdserverpb::RangeRequest& req,
                               etcdserverpb::RangeResponse& resp) {
  return call([&](Endpoint& e, grpc::ClientContext& ctx) { return e.kv->Range(&ctx, req, &resp); });
}

grpc::Status EtcdClient::txn(const etcdserverpb::TxnRequest& req, etcdserverpb::TxnResponse& resp) {
  ++txns_;
  return call([&](Endpoint& e, grpc::ClientContext& ctx) { return e.kv->Txn(&ctx, req, &resp); });
}

grpc::Status EtcdClient::lease_grant(int64_t ttl_s, int64_t& id, int64_t& granted_ttl_s) {
  etcdserverpb::LeaseGrantRequest req;
  req.set_ttl(ttl_s);
  etcdserverpb::LeaseGrantResponse resp;
  auto st = call(
      [&](Endpoint& e, grpc::ClientContext& ctx) { return e.lease->LeaseGrant(&ctx, req, &resp); });
  if (st.ok() && !resp.error().empty()) return {grpc::StatusCode::UNKNOWN, resp.error()};
  id = resp.id();
  granted_ttl_s = resp.ttl();
  return st;
}

grpc::Status EtcdClient::lease_revoke(int64_t id) {
  etcdserverpb::LeaseRevokeRequest req;
  req.set_id(id);
  etcdserverpb::LeaseRevokeResponse resp;
  return call([&](Endpoint& e, grpc::ClientContext& ctx) {
    return e.lease->LeaseRevoke(&ctx, req, &resp);
  });
}

grpc::Status EtcdClient::lease_keep_alive(int64_t id, int64_t& ttl_s) {
  // LeaseKeepAlive is a bidirectional stream; one request and its answer per call keeps the
  // client simple (a keep-alive every TTL/3 is a few calls a second).
  return call([&](Endpoint& e, grpc::ClientContext& ctx) {
    auto stream = e.lease->LeaseKeepAlive(&ctx);
    etcdserverpb::LeaseKeepAliveRequest req;
    req.set_id(id);
    etcdserverpb::LeaseKeepAliveResponse resp;
    if (!stream->Write(req)) return stream->Finish();
    stream->WritesDone();
    if (!stream->Read(&resp)) {
      auto st = stream->Finish();
      return st.ok() ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "keep-alive: no answer") : st;
    }
    ttl_s = resp.ttl();
    while (stream->Read(&resp)) {
    }
    return stream->Finish();
  });
}

grpc::Status EtcdClient::watch(
    const std::string& key, size_t attempt, grpc::ClientContext& ctx,
    const std::function<void(const etcdserverpb::WatchResponse&)>& on_response) {
  Endpoint& e = endpoints_[(current_.load() + attempt) % endpoints_.size()];
  auto stream = e.watch->Watch(&ctx);
  etcdserverpb::WatchRequest req;
  req.mutable_create_request()->set_key(key);
  if (!stream->Write(req)) return stream->Finish();
  etcdserverpb::WatchResponse resp;
  while (stream->Read(&resp)) {
    on_response(resp);
    if (resp.canceled()) {
      ctx.TryCancel();  // etcd ended this watch (compaction, shutdown): Finish would wait
      break;
    }
  }
  return stream->Finish();
}

}  // namespace srv6gw::sr_controller
