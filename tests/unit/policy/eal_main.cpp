// SPDX-License-Identifier: BSD-3-Clause
// gtest main for tests that need DPDK memory (the exact table, rte_lpm, mempools): EAL without
// hugepages or PCI. --no-huge implies legacy memory, which --in-memory refuses, so the
// process gets --no-shconf and a file prefix of its own (parallel tests do not collide) and
// removes its runtime directory at exit. SRV6GW_TEST_EAL_MEM (MB) overrides the size.
#include <gtest/gtest.h>
#include <rte_eal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  const char* mem = std::getenv("SRV6GW_TEST_EAL_MEM");
  std::vector<std::string> args = {
      "srv6gw-test", "--no-huge",
      "--no-shconf", "--file-prefix=srv6gw-test-" + std::to_string(getpid()),
      "-m",          mem ? mem : "1024",
      "--no-pci",    "--log-level=3",
      "-l",          "0"};
  std::vector<char*> argv_eal;
  for (auto& a : args) argv_eal.push_back(a.data());
  if (rte_eal_init(int(argv_eal.size()), argv_eal.data()) < 0) {
    std::fprintf(stderr, "rte_eal_init failed: cannot run DPDK tests here\n");
    return 1;
  }
  const std::string runtime_dir = rte_eal_get_runtime_dir();
  const int rc = RUN_ALL_TESTS();
  rte_eal_cleanup();
  std::error_code ec;
  std::filesystem::remove_all(runtime_dir, ec);
  return rc;
}
