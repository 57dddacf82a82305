-- gcra.lua: CL.THROTTLE (redis-cell v0.5.0 semantics) as a Redis script.
--
-- This is the baseline bench runs against Redcell: "Redis running the same
-- algorithm in memory". Call it as
--
--   EVALSHA <sha> 1 <key> <max_burst> <count per period> <period> [<quantity>]
--
-- and it answers the five integers CL.THROTTLE answers, with the same errors
-- (gcra/DESIGN.md gives the rules; internal/vectors/testdata holds replies
-- recorded from redis-cell). The stored value is the TAT in Unix
-- nanoseconds as a decimal string, with a PX expiry, as redis-cell stores it.
--
-- Lua 5.1 numbers are doubles, exact for integers up to 2^53. A Unix time in
-- nanoseconds (~1.7e18) is not, so absolute times are split into whole
-- microseconds (~1.7e15, exact) plus 0..999 ns, and all arithmetic is done on
-- durations in nanoseconds relative to "now" (exact up to 2^53 ns = 104 days).
-- bench/DESIGN.md lists where this differs from the spec.
--
-- The script is written flat on purpose: every `local function` is a closure
-- created on each call, and this runs once per decision in a benchmark, so
-- helpers that are used once, or only on error paths, are inlined.

local E = 'Cell error: Store error: '
local USAGE = E .. 'Usage: cl.throttle <key> <max_burst> <count per period> <period> [<quantity>]'
local I64_MIN = -9223372036854775808
local I64_TOP = 9223372036854775808 -- 2^63, the double nearest to MaxInt64
-- A script reply casts the double to long long, and 2^63 would wrap to
-- I64_MIN, so replies saturate at the largest double below 2^63.
local REPLY_MAX = 9223372036854774784
local NO_RETRY = -1e9 -- "-1 s": allowed, or the quantity can never fit
local EXACT_MOD = 8796093022208 -- 2^43, see trunc_div
local ARGS3 = '^[+-]?%d+ [+-]?%d+ [+-]?%d+$'
local ARGS4 = '^[+-]?%d+ [+-]?%d+ [+-]?%d+ [+-]?%d+$'

-- trunc_div is integer division truncated toward zero for integral doubles
-- below 2^53 and b >= 1000. A plain floor(a/b) can round up to the next
-- integer for large a; math.fmod is exact. Below 2^43 the quotient's rounding
-- error is far below 1/b, so Lua's % (an opcode, not a library call) is exact
-- too: the common case.
local function trunc_div(a, b)
  if a >= 0 and a < EXACT_MOD then return (a - a % b) / b end
  return (a - math.fmod(a, b)) / b
end

-- secs is the spec's secs(d): whole seconds toward zero, plus one when d > 0
-- and its sub-second part holds at least one whole millisecond.
local function secs(d)
  local s = trunc_div(d, 1e9)
  if d > 0 and d - s * 1e9 >= 1e6 then s = s + 1 end
  return s
end

-- env:begin
-- The environment: where time comes from and how the TAT is kept. This is
-- the production block: Redis's clock, Redis's key expiry. gcra_lua_test.go
-- swaps it for a block that takes the time from a trailing ARGV and emulates
-- redis-cell's expiry against that injected clock.

-- The decision's time as Unix microseconds plus 0..999 ns.
local clock = redis.call('TIME')
local now_us, now_ns = tonumber(clock[1]) * 1000000 + tonumber(clock[2]), 0

-- load_tat returns the stored TAT (decimal ns) of key, or nil when absent.
local function load_tat(key)
  return redis.call('GET', key)
end

-- store_tat stores the TAT to expire after ttl_ms (>= -1) as redis-cell
-- does. redis-cell's 0 ms keeps the key to the end of the current
-- millisecond and its -1 ms means no expiry at all (with a TAT already in
-- the past); PX needs a positive value, so both become 1 ms.
local function store_tat(key, tat, ttl_ms)
  if ttl_ms < 1 then ttl_ms = 1 end
  redis.call('SET', key, tat, 'PX', ttl_ms)
end
-- env:end

local nargs = #ARGV
if #KEYS ~= 1 or nargs < 3 or nargs > 4 then
  return redis.error_reply(USAGE)
end

-- The four numbers are checked as strconv.ParseInt(s, 10, 64) would. The
-- common case is one pattern match over the arguments joined by spaces: no
-- valid argument holds a space, so the joined string matches exactly when
-- every argument does. On a mismatch, or for arguments long enough to
-- overflow, each is checked on its own, in order, and the first bad one is
-- reported.
local a1, a2, a3, a4 = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
if not string.find(table.concat(ARGV, ' '), nargs == 3 and ARGS3 or ARGS4)
    or #a1 > 18 or #a2 > 18 or #a3 > 18 or (a4 and #a4 > 18) then
  for i = 1, nargs do
    local s = ARGV[i]
    local sign, digits = string.match(s, '^([+-]?)0*(%d*)$')
    local ok = sign ~= nil and string.find(s, '%d') ~= nil and #digits <= 19
    if ok and #digits == 19 then
      ok = digits <= ((sign == '-') and '9223372036854775808' or '9223372036854775807')
    end
    if not ok then
      return redis.error_reply(E .. "Couldn't parse as integer: " .. s)
    end
  end
end
local burst, count, period, quantity = tonumber(a1), tonumber(a2), tonumber(a3), 1
if a4 then quantity = tonumber(a4) end

-- Emission interval T in ns: float64(P*1e9)/float64(C), truncated toward
-- zero and saturated to int64 (no NaN: neither operand is zero here).
local T = 0
if count ~= 0 and period ~= 0 then
  local t = period * 1e9 / count
  if t >= I64_TOP then T = I64_TOP
  elseif t <= I64_MIN then T = I64_MIN
  elseif t >= 0 then T = math.floor(t)
  else T = math.ceil(t) end
end
if T == 0 then return redis.error_reply(E .. 'Zero rates are not supported') end

local limit = burst + 1
local tau = T * limit
local inc = T * quantity

-- diff = stored TAT - now (ns); an absent key has TAT = now. The stored
-- decimal string is split at the microsecond so both halves are exact.
local diff = 0
local stored = load_tat(KEYS[1])
if stored then
  local n, tat_us, tat_ns = #stored, nil, nil
  if n > 4 then
    tat_us, tat_ns = tonumber(string.sub(stored, 1, n - 3)), tonumber(string.sub(stored, n - 2))
    if tat_ns and tat_ns > 0 and string.byte(stored, 1) == 45 then -- '-': borrow
      tat_us, tat_ns = tat_us - 1, 1000 - tat_ns
    end
  else -- |TAT| below 10 µs
    tat_ns = tonumber(stored)
    if tat_ns then
      tat_us = math.floor(tat_ns / 1000)
      tat_ns = tat_ns - tat_us * 1000
    end
  end
  if not tat_us or not tat_ns then return redis.error_reply(E .. 'stored value is not a TAT') end
  diff = (tat_us - now_us) * 1000 + (tat_ns - now_ns)
end

local new_off = inc -- new TAT - now = max(now, tat) + inc - now
if diff > 0 then new_off = diff + inc end
local allow_off = new_off - tau -- allow_at - now

local limited, retry, ttl = 0, NO_RETRY, new_off
if allow_off > 0 then
  -- Limited: nothing is written, not even a TTL refresh.
  limited, ttl = 1, diff
  if inc <= tau then retry = allow_off end
else
  local ttl_ms = trunc_div(ttl, 1e6)
  if ttl_ms <= -2 then
    -- redis-cell writes the (past) TAT, then fails to set the expiry, so the
    -- key stays forever. The spec lets such a past TAT count as absent:
    -- deleting the key gives that state without the leak.
    redis.call('DEL', KEYS[1])
    return redis.error_reply(E .. 'Error while setting key expire')
  end
  -- The new TAT as a decimal ns string: (now_us + q) µs and r ns, where
  -- now_ns + new_off = q*1000 + r with 0 <= r < 1000.
  local x = now_ns + new_off
  local r
  if x > -EXACT_MOD and x < EXACT_MOD then
    r = x % 1000 -- Lua's % floors: r is in [0, 1000), exact below 2^43
  else
    r = math.fmod(x, 1000)
    if r < 0 then r = r + 1000 end
  end
  local us = now_us + (x - r) / 1000
  local tat
  if us > 0 then
    tat = string.format('%.0f%03d', us, r)
  elseif us == 0 then
    tat = string.format('%d', r)
  else -- negative: print the magnitude, (-us-1) µs and (1000-r) ns, with a '-'
    if r > 0 then us, r = us + 1, 1000 - r end
    if us == 0 then tat = string.format('-%d', r)
    else tat = string.format('-%.0f%03d', -us, r) end
  end
  store_tat(KEYS[1], tat, ttl_ms)
end

-- remaining = trunc_sat(float64(next/1000) / float64(T/1000)): x/0 is +Inf
-- (saturated) and 0/0 is NaN (0).
local remaining = 0
local next_ns = tau - ttl
if next_ns > -T then
  local q = trunc_div(next_ns, 1000) / trunc_div(T, 1000)
  if q ~= q then remaining = 0
  elseif q >= REPLY_MAX then remaining = REPLY_MAX
  elseif q <= I64_MIN then remaining = I64_MIN
  elseif q >= 0 then remaining = math.floor(q)
  else remaining = math.ceil(q) end
end

local retry_s = -1
if retry ~= NO_RETRY then retry_s = secs(retry) end
return { limited, limit, remaining, retry_s, secs(ttl) }
