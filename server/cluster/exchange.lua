-- One engine's exchange with the shared count, run atomically by Redis.
--
-- KEYS: the bucket key of each return, then the key base of each ask
-- (<prefix>c:{<rule key>}:, to which a bucket number or "engines" is
-- appended).
-- ARGV: buckets per window, how long an engine is remembered (ms), the
-- engine (empty: counted as none), the number of returns; then each return's unused; then each
-- ask's threshold, bucket length (ms), want, charge, next (1 or 0) and
-- the span of the charge (ms).
-- Answers six integers per ask: granted, bucket, starts in (ms), ends in
-- (ms), engines, used (the fullest window, the grant included).
local buckets = tonumber(ARGV[1])
local memoryMs = tonumber(ARGV[2])
local engine = ARGV[3]
local returns = tonumber(ARGV[4])

local time = redis.call('TIME')
local nowMs = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

-- Numbers go into keys and commands as integers, never as 1e+15.
local function int(n)
	return string.format('%d', n)
end

for i = 1, returns do
	local unused = tonumber(ARGV[4 + i])
	local count = redis.call('GET', KEYS[i])
	if count then
		local back = math.min(unused, tonumber(count))
		if back > 0 then
			redis.call('DECRBY', KEYS[i], int(back))
		end
	end
end

local answer = {}
local a = 4 + returns
for k = returns + 1, #KEYS do
	local base = KEYS[k]
	local threshold = tonumber(ARGV[a + 1])
	local bucketMs = tonumber(ARGV[a + 2])
	local want = tonumber(ARGV[a + 3])
	local charge = tonumber(ARGV[a + 4])
	local next = ARGV[a + 5] == '1'
	local chargeSpanMs = tonumber(ARGV[a + 6])
	a = a + 6
	local ttlMs = int((buckets + 2) * bucketMs)
	local cur = math.floor(nowMs / bucketMs)
	local target = cur
	if next then
		target = cur + 1
	end

	-- A charge made over the last chargeSpanMs is spread evenly over the
	-- buckets of that span, the current one taking the remainder.
	if charge > 0 then
		local spread = math.min(math.max(math.ceil(chargeSpanMs / bucketMs), 1), buckets)
		local each = math.floor(charge / spread)
		for k = 0, spread - 1 do
			local n = each
			if k == 0 then
				n = each + charge % spread
			end
			if n > 0 then
				redis.call('INCRBY', base .. int(cur - k), int(n))
				redis.call('PEXPIRE', base .. int(cur - k), ttlMs)
			end
		end
	end

	-- Counts exist up to bucket cur+1 (asks for the next bucket), so the
	-- windows that hold target and may already be full end at target …
	-- cur+1: used is the fullest of them.
	local first = target - buckets + 1
	local names = {}
	for b = first, cur + 1 do
		names[#names + 1] = base .. int(b)
	end
	local counts = redis.call('MGET', unpack(names))
	for i = 1, #counts do
		counts[i] = tonumber(counts[i]) or 0
	end
	local used = 0
	for last = target, cur + 1 do
		local sum = 0
		for b = last - buckets + 1, last do
			sum = sum + counts[b - first + 1]
		end
		used = math.max(used, sum)
	end

	local granted = math.max(0, math.min(want, threshold - used))
	if granted > 0 then
		redis.call('INCRBY', base .. int(target), int(granted))
		redis.call('PEXPIRE', base .. int(target), ttlMs)
	end

	local engines = base .. 'engines'
	if engine ~= '' then
		redis.call('ZADD', engines, int(nowMs), engine)
	end
	redis.call('ZREMRANGEBYSCORE', engines, '-inf', '(' .. int(nowMs - memoryMs))
	redis.call('PEXPIRE', engines, int(memoryMs))

	answer[#answer + 1] = granted
	answer[#answer + 1] = target
	answer[#answer + 1] = math.max(target * bucketMs - nowMs, 0)
	answer[#answer + 1] = (target + 1) * bucketMs - nowMs
	answer[#answer + 1] = redis.call('ZCARD', engines)
	answer[#answer + 1] = used + granted
end
return answer
