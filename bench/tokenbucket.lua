-- TB.TAKE as a Redis script: the greedy token bucket as people write it
-- (HMGET tokens/ts, refill by elapsed time, HMSET, PEXPIRE). Float tokens,
-- millisecond timestamps from TIME, no argument validation beyond tonumber.
--
-- KEYS[1] = key; ARGV = capacity refill_tokens refill_period_ms [cost]
-- Reply, as TB.TAKE's: {limited, capacity, remaining, retry_after_ms, reset_after_ms}
--
-- It is bench's baseline for TB.TAKE, not a copy of the spec: see
-- bench/DESIGN.md ("Token bucket and sliding log") for where it differs.
local key = KEYS[1]
local capacity = tonumber(ARGV[1])
local refill = tonumber(ARGV[2])
local period = tonumber(ARGV[3])
local cost = tonumber(ARGV[4] or '1')

local t = redis.call('TIME')
local now = t[1] * 1000 + t[2] / 1000 -- ms, with the microseconds as a fraction

local v = redis.call('HMGET', key, 'tokens', 'ts')
local tokens = tonumber(v[1])
local ts = tonumber(v[2])
if tokens == nil or ts == nil then
  tokens = capacity
else
  local elapsed = now - ts
  if elapsed > 0 then
    tokens = math.min(capacity, tokens + elapsed * refill / period)
  end
end

local limited = 1
local retry = -1
if cost <= tokens then
  limited = 0
  tokens = tokens - cost
elseif cost <= capacity then
  retry = math.ceil((cost - tokens) * period / refill)
end

local reset = math.ceil((capacity - tokens) * period / refill)
redis.call('HMSET', key, 'tokens', tokens, 'ts', now)
if reset > 0 then
  redis.call('PEXPIRE', key, reset)
else
  redis.call('DEL', key)
end
return {limited, capacity, math.floor(tokens), retry, reset}
