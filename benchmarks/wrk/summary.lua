-- Shared by the wrk scripts: every thread counts answers with a wrong body in `bad`;
-- `done` prints the run as one JSON line (times in microseconds) for http_load.py.
threads = {}

function count_thread(thread)
  table.insert(threads, thread)
end

function done(summary, latency, requests)
  local bad = 0
  for _, thread in ipairs(threads) do
    bad = bad + thread:get("bad")
  end
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {"requests": %d, "duration_us": %d, "bad_bodies": %d, '
      .. '"errors": {"connect": %d, "read": %d, "write": %d, "status": %d, "timeout": %d}, '
      .. '"latency_us": {"p50": %.1f, "p90": %.1f, "p99": %.1f, "max": %.1f, "mean": %.1f}}\n',
    summary.requests, summary.duration, bad,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.max, latency.mean))
end
