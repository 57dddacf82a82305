package fsm

// ZsetElement appends one element of a sorted set's value (zsetvalue.go).
func ZsetElement(dst []byte, score float64, member string) []byte {
	return zAppend(dst, score, []byte(member))
}

// CheckZsetValue is the snapshot restore's check of a sorted set's value.
func CheckZsetValue(v []byte, count int64) error { return zsetCheckValue(v, count) }
