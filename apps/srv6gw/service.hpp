// SPDX-License-Identifier: BSD-3-Clause
// systemd integration (dist/systemd/srv6gw.service, Type=notify): READY=1 once the ports are
// up and the workers forward, WATCHDOG=1 from the control loop at half the unit's
// WatchdogSec, STOPPING=1 on the way out. Without NOTIFY_SOCKET (not under systemd) every
// call is a no-op. Main lcore only.
#pragma once

#include <chrono>
#include <string>

namespace srv6gw::app {

class ServiceNotifier {
 public:
  ServiceNotifier();
  void ready(const std::string& status);
  // Called every control-loop pass: pets the watchdog when half its period passed.
  void tick(std::chrono::steady_clock::time_point now);
  void stopping();

 private:
  std::chrono::microseconds watchdog_period_{0};  // 0 = no watchdog
  std::chrono::steady_clock::time_point next_pet_{};
};

}  // namespace srv6gw::app
