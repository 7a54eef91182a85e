// SPDX-License-Identifier: BSD-3-Clause
#include "dataplane/counters.hpp"

namespace srv6gw::dataplane {

const char* to_string(DropReason r) {
  return net::enum_name(kDropReasonNames, r);
}

void accumulate(WorkerCounters& into, const WorkerCounters& from) {
#define SRV6GW_ADD_(member) into.member += from.member;
  SRV6GW_WORKER_COUNTERS(SRV6GW_ADD_)
#undef SRV6GW_ADD_
#define SRV6GW_ADD_GROUP_(member, names, prefix) \
  for (size_t i = 0; i < into.member.size(); ++i) into.member[i] += from.member[i];
  SRV6GW_WORKER_COUNTER_GROUPS(SRV6GW_ADD_GROUP_)
#undef SRV6GW_ADD_GROUP_
  for (size_t i = 0; i < into.rx_burst_histogram.size(); ++i)
    into.rx_burst_histogram[i] += from.rx_burst_histogram[i];
}

uint64_t total_drops(const WorkerCounters& c) {
  uint64_t n = 0;
  for (uint64_t d : c.drops) n += d;
  return n;
}

}  // namespace srv6gw::dataplane
