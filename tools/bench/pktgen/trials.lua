-- SPDX-License-Identifier: BSD-3-Clause
-- Pktgen-DPDK as a trial server for tools/bench/pktgen/pktgen_bench.py (RFC 2544 searches).
--
-- Pktgen starts once (its mbuf pools take many seconds); the driver then asks for one trial at
-- a time through a FIFO, because the next rate of a binary search depends on the last result
-- and the driver reads the device under test's own counters between trials. Commands, one per
-- line:
--   trial RATE_PERCENT MILLISECONDS [TX RX]
--                                     send from the TX port at RATE for that long, stop, wait
--                                     for in-flight frames and pktgen's 1 s stats refresh,
--                                     report the port counter differences; TX and RX name the
--                                     ports of this trial (default PKTGEN_BENCH_TX / _RX, or
--                                     0 and 1): the decap direction sends on 1, receives on 0
--   quit
-- Results are appended to a plain file, one line each (the screen is full of terminal escapes).
local cmd_path = os.getenv("PKTGEN_BENCH_CMDS")
local out_path = os.getenv("PKTGEN_BENCH_RESULTS")
local default_tx = os.getenv("PKTGEN_BENCH_TX") or "0"
local default_rx = os.getenv("PKTGEN_BENCH_RX") or "1"
-- pktgen refreshes the counters portStats returns once a second (its timer thread): wait
-- longer than that after stopping so that the last frames are counted on both ports.
local settle_ms = tonumber(os.getenv("PKTGEN_BENCH_SETTLE_MS") or "1600")

local out = assert(io.open(out_path, "a"))
local function report(line)
  out:write(line, "\n")
  out:flush()
end

-- pktgen.delay sleeps in 10 ms steps, which a loaded machine stretches: the trial's real
-- length comes from the kernel's clock (/proc/uptime, 10 ms resolution), not from the delay asked.
local function now()
  local f = assert(io.open("/proc/uptime"))
  local v = f:read("n")
  f:close()
  return v
end

local function counters(port)
  return pktgen.portStats(port, "port")[tonumber(port)]
end

pktgen.stop("all")
pktgen.delay(settle_ms)
report("ready")

-- Opening the FIFO blocks until the driver opens its end.
local cmds = assert(io.open(cmd_path, "r"))
for line in cmds:lines() do
  local op, rate, ms, tx, rx = line:match("^(%S+)%s*(%S*)%s*(%S*)%s*(%S*)%s*(%S*)")
  if op == "quit" then
    break
  elseif op == "trial" then
    local tx_port = (tx ~= "" and tx) or default_tx
    local rx_port = (rx ~= "" and rx) or default_rx
    -- Both ports: one lcore serves both, and pktgen 23.03 paces every port of an lcore with
    -- the first port's rate (pktgen_main_rxtx_loop uses infos[0]->tx_cycles), so port 1 sends
    -- at port 0's rate. The rate reported is frames actually sent per second anyway.
    pktgen.set("all", "rate", rate)
    local t0, r0 = counters(tx_port), counters(rx_port)
    local began = now()
    pktgen.start(tx_port)
    pktgen.delay(tonumber(ms))
    pktgen.stop(tx_port)
    local sent_for = now() - began
    -- Counters are final once two reads a refresh apart agree (pktgen's timer thread can
    -- itself be late on a busy machine; a stale read showed more frames received than sent).
    pktgen.delay(settle_ms)
    local t1, r1 = counters(tx_port), counters(rx_port)
    for _ = 1, 6 do
      pktgen.delay(1100)
      local t2, r2 = counters(tx_port), counters(rx_port)
      local same = t2.opackets == t1.opackets and r2.ipackets == r1.ipackets
      t1, r1 = t2, r2
      if same then break end
    end
    report(string.format(
      "result rate=%s ms=%s tx=%s rx=%s seconds=%.2f tx_opackets=%d tx_obytes=%d tx_oerrors=%d rx_ipackets=%d " ..
      "rx_ibytes=%d rx_imissed=%d rx_ierrors=%d rx_nombuf=%d",
      rate, ms, tx_port, rx_port, sent_for, t1.opackets - t0.opackets, t1.obytes - t0.obytes, t1.oerrors - t0.oerrors,
      r1.ipackets - r0.ipackets, r1.ibytes - r0.ibytes, r1.imissed - r0.imissed,
      r1.ierrors - r0.ierrors, r1.rx_nombuf - r0.rx_nombuf))
  elseif op ~= nil then
    report("error unknown command: " .. line)
  end
end
report("bye")
pktgen.quit()
