-- tools/call through /mcp as raw JSON-RPC POSTs. Arguments after `--`: the number of wrk
-- threads, then session ids (opened beforehand). Each thread takes its own share of the
-- sessions and numbers its requests, so no two requests in flight share a session and id.
local here = debug.getinfo(1, "S").source:match("@(.*/)") or "./"
dofile(here .. "summary.lua")

local created = 0

function setup(thread)
  thread:set("index", created)
  created = created + 1
  count_thread(thread)
end

local mine, n = {}, 0
bad = 0

function init(args)
  local count = tonumber(args[1])
  for i = 2, #args do
    if (i - 2) % count == index then
      table.insert(mine, args[i])
    end
  end
end

function request()
  n = n + 1
  local body = string.format('{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": '
    .. '{"name": "call_tool", "arguments": {"name": "everything__echo", '
    .. '"arguments": {"message": "load"}}}}', n)
  local headers = {
    ["Content-Type"] = "application/json",
    ["Accept"] = "application/json, text/event-stream",
    ["Mcp-Session-Id"] = mine[(n % #mine) + 1],
    ["Mcp-Protocol-Version"] = "2025-06-18",
  }
  return wrk.format("POST", nil, headers, body)
end

function response(status, headers, body)
  if status == 200 and not body:find("Echo: load", 1, true) then
    bad = bad + 1
  end
end
