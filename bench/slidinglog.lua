-- SL.HIT as a Redis script: the sorted-set sliding log as people write it
-- (ZREMRANGEBYSCORE the entries that left the window, ZCARD, ZADD, PEXPIRE).
-- One member per recorded hit, scored by its time in microseconds from TIME.
--
-- KEYS[1] = key; ARGV = limit window_ms
-- Reply, as SL.HIT's: {limited, limit, remaining, retry_after_ms, reset_after_ms}
--
-- It is bench's baseline for SL.HIT, not a copy of the spec: see
-- bench/DESIGN.md ("Token bucket and sliding log") for where it differs.
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])

local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2] -- µs
local window_us = window * 1000

-- An entry recorded at s is live while now < s + window.
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window_us)
local count = redis.call('ZCARD', key)
if count < limit then
  -- The member must be unique per hit: the time alone would merge two hits
  -- of one microsecond; the count makes it unique (it grows with each hit
  -- of one instant, nothing leaves the window within it).
  redis.call('ZADD', key, now, now .. '-' .. count)
  redis.call('PEXPIRE', key, window)
  return {0, limit, limit - count - 1, -1, window}
end

local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
local retry = math.ceil((tonumber(oldest[2]) + window_us - now) / 1000)
local reset = math.ceil((tonumber(newest[2]) + window_us - now) / 1000)
return {1, limit, 0, retry, reset}
