-- POST /api/v1/check/batch: 100 decisions per request, over ten resources.
-- wrk -t2 -c64 -d15s --latency -s batch.lua http://127.0.0.1:8080/api/v1/check/batch
-- Decisions per second are the requests per second times 100.
local checks = {}
for i = 0, 99 do
  checks[#checks + 1] = string.format('{"resource":"bench-%d","count":1}', i % 10)
end
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("SLUICE_TOKEN")
wrk.body = '{"checks":[' .. table.concat(checks, ",") .. ']}'
