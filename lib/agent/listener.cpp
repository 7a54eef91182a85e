// SPDX-License-Identifier: BSD-3-Clause
#include "agent/listener.hpp"

#include <grpcpp/security/server_credentials.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace srv6gw::agent {

namespace {

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

}  // namespace

std::optional<Listener> prepare_listener(const AgentOptions& options, std::string& error) {
  Listener l;
  l.address = options.listen;
  const bool any_tls =
      !options.tls_cert.empty() || !options.tls_key.empty() || !options.tls_client_ca.empty();
  if (is_unix_listen(options.listen)) {
    if (any_tls) {
      error =
          "the --agent-tls-* options are for a TCP listener (--agent-listen HOST:PORT); a "
          "unix socket is protected by its file permissions";
      return std::nullopt;
    }
    l.socket_path = unix_socket_path(options.listen);
    if (!prepare_unix_socket(l.socket_path, error)) return std::nullopt;
    l.address = "unix:" + l.socket_path;
    l.credentials = grpc::InsecureServerCredentials();
  } else if (any_tls) {
    std::string missing;
    if (options.tls_cert.empty()) missing += " --agent-tls-cert";
    if (options.tls_key.empty()) missing += " --agent-tls-key";
    if (options.tls_client_ca.empty()) missing += " --agent-tls-client-ca";
    if (!missing.empty()) {
      error = "TCP with TLS needs mutual TLS: missing" + missing;
      return std::nullopt;
    }
    grpc::SslServerCredentialsOptions ssl(
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
    pair.private_key = read_file(options.tls_key, error);
    if (!error.empty()) return std::nullopt;
    pair.cert_chain = read_file(options.tls_cert, error);
    if (!error.empty()) return std::nullopt;
    ssl.pem_root_certs = read_file(options.tls_client_ca, error);
    if (!error.empty()) return std::nullopt;
    ssl.pem_key_cert_pairs.push_back(std::move(pair));
    l.credentials = grpc::SslServerCredentials(ssl);
  } else if (options.insecure_tcp) {
    spdlog::warn("**************************************************************************");
    spdlog::warn("agent: PLAIN TCP on {} (--agent-insecure-tcp): no TLS, no authentication.",
                 options.listen);
    spdlog::warn("agent: anyone who can reach this port can reprogram the gateway. Lab use only.");
    spdlog::warn("**************************************************************************");
    l.credentials = grpc::InsecureServerCredentials();
  } else {
    error = "refusing plain TCP on " + options.listen +
            ": give --agent-tls-cert, --agent-tls-key and --agent-tls-client-ca (mutual TLS), "
            "or --agent-insecure-tcp for a lab";
    return std::nullopt;
  }
  return l;
}

}  // namespace srv6gw::agent
