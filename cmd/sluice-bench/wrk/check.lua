-- POST /api/v1/check: one decision per request.
-- wrk -t2 -c64 -d15s --latency -s check.lua http://127.0.0.1:8080/api/v1/check
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("SLUICE_TOKEN")
wrk.body = '{"resource":"bench","count":1}'
