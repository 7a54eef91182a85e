// SPDX-License-Identifier: BSD-3-Clause
// TCP transport: mutual TLS accepts a client whose certificate chains to the configured CA and
// refuses one without a certificate, one from another CA, and a plain-text client; plain TCP
// is refused unless explicitly allowed. Certificates are made with openssl for each run.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "agent/agent.hpp"
#include "agent_test_util.hpp"

#ifndef SRV6GW_MAKE_TEST_CERTS
#error "SRV6GW_MAKE_TEST_CERTS (path of make_test_certs.sh) must be defined"
#endif

namespace srv6gw::agent::test {
namespace {

class AgentTls : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("command -v openssl >/dev/null 2>&1") != 0) {
      GTEST_SKIP() << "openssl is not installed: cannot make test certificates";
    }
    const std::string cmd = std::string(SRV6GW_MAKE_TEST_CERTS) + " " + certs.path();
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    sink.running = base_config();
  }

  std::string pem(const std::string& name) { return certs.file(name); }

  AgentOptions tls_options() {
    AgentOptions o;
    o.listen = "127.0.0.1:0";
    o.state_path.clear();
    o.tls_cert = pem("server.pem");
    o.tls_key = pem("server.key");
    o.tls_client_ca = pem("ca.pem");
    return o;
  }

  // GetState over a fresh channel; the status says whether the server let us in.
  grpc::Status call(const std::string& address, std::shared_ptr<grpc::ChannelCredentials> creds) {
    grpc::ChannelArguments args;
    args.SetSslTargetNameOverride("localhost");
    auto stub = v1::Gateway::NewStub(grpc::CreateCustomChannel(address, creds, args));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::GetStateResponse resp;
    return stub->GetState(&ctx, {}, &resp);
  }

  std::shared_ptr<grpc::ChannelCredentials> tls(const std::string& ca, const std::string& cert,
                                                const std::string& key) {
    grpc::SslCredentialsOptions o;
    o.pem_root_certs = slurp(pem(ca));
    if (!cert.empty()) o.pem_cert_chain = slurp(pem(cert));
    if (!key.empty()) o.pem_private_key = slurp(pem(key));
    return grpc::SslCredentials(o);
  }

  TempDir certs;
  FakeSink sink;
};

TEST_F(AgentTls, MutualTlsAcceptsOnlyClientsOfTheConfiguredCa) {
  std::string err;
  auto agent = Agent::start(tls_options(), sink, base_config(), 0, err);
  ASSERT_TRUE(agent) << err;
  const std::string address = agent->address();
  EXPECT_EQ(address.rfind("127.0.0.1:", 0), 0u);
  EXPECT_NE(address, "127.0.0.1:0");  // the bound port is reported

  auto ok = call(address, tls("ca.pem", "client.pem", "client.key"));
  EXPECT_TRUE(ok.ok()) << ok.error_message();

  auto no_cert = call(address, tls("ca.pem", "", ""));
  EXPECT_FALSE(no_cert.ok());
  EXPECT_EQ(no_cert.error_code(), grpc::StatusCode::UNAVAILABLE) << no_cert.error_message();

  auto foreign = call(address, tls("ca.pem", "other-client.pem", "other-client.key"));
  EXPECT_FALSE(foreign.ok());
  EXPECT_EQ(foreign.error_code(), grpc::StatusCode::UNAVAILABLE) << foreign.error_message();

  auto plain = call(address, grpc::InsecureChannelCredentials());
  EXPECT_FALSE(plain.ok());

  // The client checks the server too: a server it has no CA for is refused.
  auto wrong_trust = call(address, tls("other-ca.pem", "client.pem", "client.key"));
  EXPECT_FALSE(wrong_trust.ok());

  // And the accepted client still is after all those refusals.
  EXPECT_TRUE(call(address, tls("ca.pem", "client.pem", "client.key")).ok());
}

TEST_F(AgentTls, PlainTcpIsRefusedUnlessAllowed) {
  AgentOptions o;
  o.listen = "127.0.0.1:0";
  o.state_path.clear();
  std::string err;
  EXPECT_FALSE(Agent::start(o, sink, base_config(), 0, err));
  EXPECT_NE(err.find("refusing plain TCP"), std::string::npos) << err;

  o.insecure_tcp = true;
  err.clear();
  auto agent = Agent::start(o, sink, base_config(), 0, err);
  ASSERT_TRUE(agent) << err;
  EXPECT_TRUE(call(agent->address(), grpc::InsecureChannelCredentials()).ok());
}

TEST_F(AgentTls, IncompleteOrUnreadableTlsOptionsAreRefused) {
  std::string err;
  AgentOptions o = tls_options();
  o.tls_client_ca.clear();  // server-only TLS is not offered: controllers must authenticate
  EXPECT_FALSE(Agent::start(o, sink, base_config(), 0, err));
  EXPECT_NE(err.find("missing --agent-tls-client-ca"), std::string::npos) << err;

  o = tls_options();
  o.tls_key = certs.file("nope.key");
  err.clear();
  EXPECT_FALSE(Agent::start(o, sink, base_config(), 0, err));
  EXPECT_NE(err.find("cannot read"), std::string::npos) << err;

  o = tls_options();
  o.listen = "unix:" + certs.file("a.sock");
  err.clear();
  EXPECT_FALSE(Agent::start(o, sink, base_config(), 0, err));
  EXPECT_NE(err.find("TCP listener"), std::string::npos) << err;

  o = tls_options();
  o.listen = "256.1.1.1:1";
  err.clear();
  EXPECT_FALSE(Agent::start(o, sink, base_config(), 0, err));
  EXPECT_NE(err.find("cannot listen"), std::string::npos) << err;
}

}  // namespace
}  // namespace srv6gw::agent::test
