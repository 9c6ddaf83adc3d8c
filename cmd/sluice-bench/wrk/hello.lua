-- POST / on sluice-bench hello: the HTTP ceiling of the machine, with a body
-- like a check's.
-- wrk -t2 -c64 -d15s --latency -s hello.lua http://127.0.0.1:8081/
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"resource":"bench","count":1}'
