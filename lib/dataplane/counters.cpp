// SPDX-License-Identifier: BSD-3-Clause
#include "dataplane/counters.hpp"

namespace srv6gw::dataplane {

const char* to_string(DropReason r) {
  switch (r) {
    case DropReason::steering_miss:
      return "steering_miss";
    case DropReason::non_roce_dropped:
      return "non_roce_dropped";
    case DropReason::non_sid_dropped:
      return "non_sid_dropped";
    case DropReason::malformed:
      return "malformed";
    case DropReason::decap_refused:
      return "decap_refused";
    case DropReason::no_usable_path:
      return "no_usable_path";
    case DropReason::no_headroom:
      return "no_headroom";
    case DropReason::header_alloc_failed:
      return "header_alloc_failed";
    case DropReason::tx_full:
      return "tx_full";
    case DropReason::oversize:
      return "oversize";
    case DropReason::probe_refused:
      return "probe_refused";
    case DropReason::probe_ring_full:
      return "probe_ring_full";
    case DropReason::count_:
      break;
  }
  return "unknown";
}

}  // namespace srv6gw::dataplane
