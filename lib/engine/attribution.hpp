// SPDX-License-Identifier: BSD-3-Clause
// Turns the data plane's feedback events into congestion evidence for our own paths.
//   cnp_decap with a reflected Tag  -> exactly that path (1 unit).
//   cnp_decap without one (a peer that does not reflect, or no SRH)
//                                   -> the paths that carried our traffic toward the CNP's
//                                      sender in the last ~5-10 ms, 1 unit shared in
//                                      proportion to the packets each carried (flow mode:
//                                      usually the one list of that pair, or mostly the one
//                                      it just left; sprayed: all of them by weight). See
//                                      docs/design/engine.md.
//   ce_decap, cnp_encap             -> counted only: they concern the remote's paths (the
//                                      reflection itself happens in the data plane).
// Pure: the recent-path lookup is a callback (the daemon reads the workers' tables through
// the Gateway; tests pass a fake).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "dataplane/feedback.hpp"
#include "engine/engine.hpp"
#include "net/addr.hpp"

namespace srv6gw::engine {

struct AttributionCounters {
  uint64_t ce_seen = 0;             // ce_decap events
  uint64_t cnp_sent = 0;            // cnp_encap events (our host reacting to CE)
  uint64_t cnp_sent_reflected = 0;  // ... that carried a reflected path id
  uint64_t cnp_reflected = 0;       // cnp_decap blamed on the reflected path id
  uint64_t cnp_fallback = 0;        // cnp_decap blamed on recently used paths
  uint64_t cnp_unattributed = 0;    // cnp_decap with no reflected id and no recent path
  uint64_t unknown_path = 0;        // reflected id that is not one of our paths
};

class Attributor {
 public:
  // Appends our paths that carried traffic from `local` toward `remote` recently, with
  // packet counts (a path may appear several times: the counts add up).
  using RecentLookup = std::function<void(const net::IpAddr& local, const net::IpAddr& remote,
                                          std::vector<dataplane::RecentUse>& uses)>;
  explicit Attributor(RecentLookup recent) : recent_(std::move(recent)) {}

  // Feeds one event to `engine`. Returns true when it became evidence for a path.
  bool feed(const dataplane::FeedbackEvent& e, Engine& engine);

  const AttributionCounters& counters() const { return counters_; }

 private:
  RecentLookup recent_;
  std::vector<dataplane::RecentUse> scratch_;
  AttributionCounters counters_;
};

}  // namespace srv6gw::engine
