-- POST /v1/route: the tasks given after `--`, k = 5, the three formats in turn.
local here = debug.getinfo(1, "S").source:match("@(.*/)") or "./"
dofile(here .. "summary.lua")

function setup(thread)
  count_thread(thread)
end

local queries, formats, n = {}, { "mcp", "openai", "anthropic" }, 0
bad = 0

function init(args)
  for i, query in ipairs(args) do
    queries[i] = (query:gsub('"', '\\"'))
  end
end

function request()
  n = n + 1
  local body = string.format('{"query": "%s", "k": 5, "format": "%s"}',
    queries[(n % #queries) + 1], formats[(n % #formats) + 1])
  return wrk.format("POST", nil, { ["Content-Type"] = "application/json" }, body)
end

function response(status, headers, body)
  -- wrk counts non-2xx itself; a 200 must carry the ranked tools
  if status == 200 and not body:find('"results":[{', 1, true) then
    bad = bad + 1
  end
end
