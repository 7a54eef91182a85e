// SPDX-License-Identifier: BSD-3-Clause
#include "agent/client_channel.hpp"

#include <absl/status/status.h>

#include <fstream>
#include <sstream>

namespace srv6gw::agent {
bool read_pem(const std::string& path, std::string& out, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot read " + path;
    return false;
  }
  std::ostringstream s;
  s << in.rdbuf();
  out = s.str();
  return true;
}

bool is_unix_target(std::string_view target) {
  return target.rfind("unix:", 0) == 0 || (!target.empty() && target[0] == '/');
}

std::shared_ptr<grpc::Channel> make_client_channel(const ChannelTarget& t,
                                                   grpc::ChannelArguments args,
                                                   std::string& error) {
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  if (is_unix_target(t.target)) {
    const std::string where = t.target[0] == '/' ? "unix:" + t.target : t.target;
    return grpc::CreateCustomChannel(where, grpc::InsecureChannelCredentials(), args);
  }
  if (t.ca.empty()) {
    if (!t.insecure) {
      error = "TCP target " + t.target +
              " needs ca (TLS, with cert and key for mutual TLS) or insecure";
      return nullptr;
    }
    return grpc::CreateCustomChannel(t.target, grpc::InsecureChannelCredentials(), args);
  }
  grpc::SslCredentialsOptions ssl;
  if (!read_pem(t.ca, ssl.pem_root_certs, error)) return nullptr;
  if (t.cert.empty() != t.key.empty()) {
    error = "cert and key go together";
    return nullptr;
  }
  if (!t.cert.empty()) {
    if (!read_pem(t.cert, ssl.pem_cert_chain, error)) return nullptr;
    if (!read_pem(t.key, ssl.pem_private_key, error)) return nullptr;
  }
  if (!t.tls_server_name.empty()) args.SetSslTargetNameOverride(t.tls_server_name);
  return grpc::CreateCustomChannel(t.target, grpc::SslCredentials(ssl), args);
}

std::string status_code_name(grpc::StatusCode code) {
  // gRPC's status codes and absl's have the same numbers and names.
  std::string name = absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
  return name.empty() ? "ERROR" : name;
}

}  // namespace srv6gw::agent
