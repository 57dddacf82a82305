package scripting

// redisRand is Redis's math.random generator (src/rand.c: redisLrand48 and
// redisSrand48), the 48-bit linear congruential generator of drand48:
// x := (0x5DEECE66D·x + 0xB) mod 2^48. Redis ships its own copy so that a
// seed draws the same numbers on every platform; Redcell uses the same one
// so that a script that seeds explicitly draws what it draws on Redis, and
// seeds it from the log entry at the start of every call (see Run) so that
// every replica draws the same numbers.
type redisRand struct{ x uint64 }

const (
	randA    = 0x5DEECE66D
	randC    = 0xB
	randMask = 1<<48 - 1
	// randMax is REDIS_LRAND48_MAX (INT32_MAX).
	randMax = 1<<31 - 1
)

// seed is redisSrand48: the high 32 bits of the state are the seed, the low
// 16 bits 0x330E.
func (r *redisRand) seed(v int32) {
	r.x = (uint64(uint32(v))<<16 | 0x330E) & randMask
}

// next is redisLrand48: the state's 31 high bits.
func (r *redisRand) next() int32 {
	r.x = (randA*r.x + randC) & randMask
	return int32(r.x >> 17)
}

// float is what redis_math_random draws before scaling: a number in [0, 1).
func (r *redisRand) float() float64 {
	return float64(r.next()%randMax) / float64(randMax)
}
