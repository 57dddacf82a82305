package scripting

import (
	"fmt"
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The cjson library is lua-cjson 2.1.0 (lua_cjson.c, with Redis's patches)
// as Redis 7.0 builds it: the global cjson with encode, decode, the seven
// configuration functions, new, null, _NAME and _VERSION. Numbers encode with
// "%.14g", '/' and control characters are escaped, a table is an array when
// its keys are 1..n (a few holes allowed: "excessively sparse" otherwise), an
// empty table is "{}", nesting is limited to 1000 levels each way, JSON null
// decodes to cjson.null. Decoding reads the input as the C code reads a C
// string: a NUL byte ends it.

// cjsonConfig is json_config_t: one per module table (cjson.new makes
// another), shared by the module's functions.
type cjsonConfig struct {
	sparseConvert         int
	sparseRatio           int
	sparseSafe            int
	encodeMaxDepth        int
	decodeMaxDepth        int
	encodeInvalidNumbers  int // 0 off, 1 on, 2 "null"
	encodeNumberPrecision int
	encodeKeepBuffer      int
	decodeInvalidNumbers  int
}

func defaultCJSONConfig() *cjsonConfig {
	return &cjsonConfig{
		sparseConvert:         0,
		sparseRatio:           2,
		sparseSafe:            10,
		encodeMaxDepth:        1000,
		decodeMaxDepth:        1000,
		encodeInvalidNumbers:  0,
		encodeNumberPrecision: 14,
		encodeKeepBuffer:      1,
		decodeInvalidNumbers:  1,
	}
}

// newCJSONModuleWithConfig builds a cjson table using cfg, with null as
// cjson.null: the value JSON null decodes to and that encodes as null. (In C
// it is the NULL light userdata, the same for every cjson table; here one
// userdata per state, shared by the tables cjson.new makes.)
func newCJSONModuleWithConfig(L *lua.LState, cfg *cjsonConfig, null *lua.LUserData) *lua.LTable {
	module := L.NewTable()
	libSetFuncs(L, module, map[string]lua.LGFunction{
		"encode": func(L *lua.LState) int { return cjsonEncode(L, cfg, null) },
		"decode": func(L *lua.LState) int { return cjsonDecode(L, cfg, null) },
		"encode_sparse_array": func(L *lua.LState) int {
			cjsonArgInit(L, 3)
			cjsonEnumOption(L, 1, &cfg.sparseConvert, nil)
			cjsonIntegerOption(L, 2, &cfg.sparseRatio, 0, math.MaxInt32)
			cjsonIntegerOption(L, 3, &cfg.sparseSafe, 0, math.MaxInt32)
			return 3
		},
		"encode_max_depth": func(L *lua.LState) int {
			cjsonArgInit(L, 1)
			return cjsonIntegerOption(L, 1, &cfg.encodeMaxDepth, 1, math.MaxInt32)
		},
		"decode_max_depth": func(L *lua.LState) int {
			cjsonArgInit(L, 1)
			return cjsonIntegerOption(L, 1, &cfg.decodeMaxDepth, 1, math.MaxInt32)
		},
		"encode_number_precision": func(L *lua.LState) int {
			cjsonArgInit(L, 1)
			return cjsonIntegerOption(L, 1, &cfg.encodeNumberPrecision, 1, 14)
		},
		"encode_keep_buffer": func(L *lua.LState) int {
			// Only where the encoder's buffer lives; nothing a script sees.
			cjsonArgInit(L, 1)
			return cjsonEnumOption(L, 1, &cfg.encodeKeepBuffer, nil)
		},
		"encode_invalid_numbers": func(L *lua.LState) int {
			cjsonArgInit(L, 1)
			return cjsonEnumOption(L, 1, &cfg.encodeInvalidNumbers, []string{"off", "on", "null"})
		},
		"decode_invalid_numbers": func(L *lua.LState) int {
			cjsonArgInit(L, 1)
			return cjsonEnumOption(L, 1, &cfg.decodeInvalidNumbers, nil)
		},
		"new": func(L *lua.LState) int {
			L.Push(newCJSONModuleWithConfig(L, defaultCJSONConfig(), null))
			return 1
		},
	})
	module.RawSetString("null", null)
	module.RawSetString("_NAME", lua.LString("cjson"))
	module.RawSetString("_VERSION", lua.LString("2.1.0"))
	return module
}

// cjsonArgInit is json_arg_init: at most args arguments, padded with nil.
func cjsonArgInit(L *lua.LState, args int) {
	if L.GetTop() > args {
		capiArgError(L, args+1, "found too many arguments")
	}
	for L.GetTop() < args {
		L.Push(lua.LNil)
	}
}

// cjsonIntegerOption is json_integer_option: set the setting from argument
// i when it is not nil (range errors name argument 1, as in C), push it.
func cjsonIntegerOption(L *lua.LState, i int, setting *int, min, max int) int {
	if L.Get(i) != lua.LNil {
		value := int(int32(capiCheckInteger(L, i))) // lua_Integer into a C int
		if value < min || value > max {
			capiArgError(L, 1, fmt.Sprintf("expected integer between %d and %d", min, max))
		}
		*setting = value
	}
	L.Push(lua.LNumber(*setting))
	return 1
}

// cjsonEnumOption is json_enum_option with bool_true 1: a boolean, or one of
// options by name ("off", "on" by default); pushes a boolean for 0 and 1 and
// the option's name otherwise.
func cjsonEnumOption(L *lua.LState, i int, setting *int, options []string) int {
	if options == nil {
		options = []string{"off", "on"}
	}
	v := L.Get(i)
	if v != lua.LNil {
		if b, ok := v.(lua.LBool); ok {
			*setting = 0
			if b {
				*setting = 1
			}
		} else {
			name := capiCheckLString(L, i)
			found := -1
			for j, o := range options {
				if o == name {
					found = j
					break
				}
			}
			if found < 0 {
				capiArgError(L, i, "invalid option '"+cStringPrefix(name)+"'")
			}
			*setting = found
		}
	}
	if *setting == 0 || *setting == 1 {
		L.Push(lua.LBool(*setting == 1))
	} else {
		L.Push(lua.LString(options[*setting]))
	}
	return 1
}

// cStringPrefix is s as C's "%s" prints it: up to the first NUL.
func cStringPrefix(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}

// ===== Encoding =====

// cjsonEncoder carries one encode call. slots counts the C function's Lua
// stack use (the argument, 1 per array level, 2 per object level), which C
// checks with lua_checkstack and reports as excessive nesting.
type cjsonEncoder struct {
	L     *lua.LState
	cfg   *cjsonConfig
	null  *lua.LUserData
	buf   []byte
	guard libOutputGuard
}

func cjsonEncode(L *lua.LState, cfg *cjsonConfig, null *lua.LUserData) int {
	if L.GetTop() != 1 {
		capiArgError(L, 1, "expected 1 argument")
	}
	e := &cjsonEncoder{L: L, cfg: cfg, null: null}
	e.guard = libOutputGuard{L: L, tooLarge: "Cannot serialise, result larger than 536870912 bytes"}
	e.appendData(L.Get(1), 0, 1)
	L.Push(lua.LString(e.buf))
	return 1
}

func (e *cjsonEncoder) fail(v lua.LValue, reason string) {
	capiRaise(e.L, "Cannot serialise %s: %s", v.Type().String(), reason)
}

func (e *cjsonEncoder) appendData(v lua.LValue, depth, slots int) {
	e.guard.check(len(e.buf))
	switch x := v.(type) {
	case lua.LString:
		e.appendString(string(x))
	case lua.LNumber:
		e.appendNumber(x)
	case lua.LBool:
		if x {
			e.buf = append(e.buf, "true"...)
		} else {
			e.buf = append(e.buf, "false"...)
		}
	case *lua.LTable:
		depth++
		if depth > e.cfg.encodeMaxDepth || slots+3 > capiCStackLimit {
			capiRaise(e.L, "Cannot serialise, excessive nesting (%d)", depth)
		}
		if n := e.arrayLength(x); n > 0 {
			e.appendArray(x, n, depth, slots)
		} else {
			e.appendObject(x, depth, slots)
		}
	case *lua.LNilType:
		e.buf = append(e.buf, "null"...)
	case *lua.LUserData:
		if x != e.null {
			e.fail(v, "type not supported")
		}
		e.buf = append(e.buf, "null"...)
	default:
		e.fail(v, "type not supported")
	}
}

// cjsonEscapes is char2escape: control characters, '"', '/', '\\' and DEL.
var cjsonEscapes = func() [256]string {
	var t [256]string
	for c := 0; c < 0x20; c++ {
		t[c] = fmt.Sprintf("\\u%04x", c)
	}
	t['\b'], t['\t'], t['\n'], t['\f'], t['\r'] = "\\b", "\\t", "\\n", "\\f", "\\r"
	t['"'], t['/'], t['\\'], t[0x7f] = "\\\"", "\\/", "\\\\", "\\u007f"
	return t
}()

func (e *cjsonEncoder) appendString(s string) {
	e.buf = append(e.buf, '"')
	for i := 0; i < len(s); i++ {
		if esc := cjsonEscapes[s[i]]; esc != "" {
			e.buf = append(e.buf, esc...)
		} else {
			e.buf = append(e.buf, s[i])
		}
	}
	e.buf = append(e.buf, '"')
}

func (e *cjsonEncoder) appendNumber(n lua.LNumber) {
	num := float64(n)
	switch e.cfg.encodeInvalidNumbers {
	case 0:
		if math.IsInf(num, 0) || math.IsNaN(num) {
			e.fail(n, "must not be NaN or Inf")
		}
	case 1:
		if math.IsNaN(num) {
			e.buf = append(e.buf, "nan"...)
			return
		}
	default:
		if math.IsInf(num, 0) || math.IsNaN(num) {
			e.buf = append(e.buf, "null"...)
			return
		}
	}
	e.buf = cAppendFormatG(e.buf, num, e.cfg.encodeNumberPrecision)
}

// arrayLength is lua_array_length: the largest key when every key is a
// positive integral number (the C code keeps it in an int, so a key of 2^31
// or more turns it negative and the table into an object), -1 for an
// object; an excessively sparse array is an object or an error.
func (e *cjsonEncoder) arrayLength(t *lua.LTable) int {
	var max, items int32
	for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
		kn, ok := k.(lua.LNumber)
		f := float64(kn)
		if !ok || f == 0 || math.Floor(f) != f || f < 1 {
			return -1
		}
		if f > float64(max) {
			max = cDoubleToInt32(f)
		}
		items++
	}
	ratio := int32(e.cfg.sparseRatio)
	if ratio > 0 && max > items*ratio && max > int32(e.cfg.sparseSafe) {
		if e.cfg.sparseConvert == 0 {
			e.fail(t, "excessively sparse array")
		}
		return -1
	}
	return int(max)
}

func (e *cjsonEncoder) appendArray(t *lua.LTable, n, depth, slots int) {
	e.buf = append(e.buf, '[')
	for i := 1; i <= n; i++ {
		if i > 1 {
			e.buf = append(e.buf, ',')
		}
		e.appendData(t.RawGetInt(i), depth, slots+1)
	}
	e.buf = append(e.buf, ']')
}

func (e *cjsonEncoder) appendObject(t *lua.LTable, depth, slots int) {
	e.buf = append(e.buf, '{')
	first := true
	for k, v := t.Next(lua.LNil); k != lua.LNil; k, v = t.Next(k) {
		if !first {
			e.buf = append(e.buf, ',')
		}
		first = false
		switch key := k.(type) {
		case lua.LNumber:
			e.buf = append(e.buf, '"')
			e.appendNumber(key)
			e.buf = append(e.buf, '"', ':')
		case lua.LString:
			e.appendString(string(key))
			e.buf = append(e.buf, ':')
		default:
			e.fail(k, "table key must be a number or string")
		}
		e.appendData(v, depth, slots+2)
	}
	e.buf = append(e.buf, '}')
}

// ===== Decoding =====

type cjsonTokenType int

const (
	cjsonTokObjBegin cjsonTokenType = iota
	cjsonTokObjEnd
	cjsonTokArrBegin
	cjsonTokArrEnd
	cjsonTokString
	cjsonTokNumber
	cjsonTokBoolean
	cjsonTokNull
	cjsonTokColon
	cjsonTokComma
	cjsonTokEnd
	cjsonTokWhitespace
	cjsonTokError
	cjsonTokUnknown
)

var cjsonTokenNames = [...]string{
	"T_OBJ_BEGIN", "T_OBJ_END", "T_ARR_BEGIN", "T_ARR_END", "T_STRING",
	"T_NUMBER", "T_BOOLEAN", "T_NULL", "T_COLON", "T_COMMA", "T_END",
	"T_WHITESPACE", "T_ERROR", "T_UNKNOWN",
}

var cjsonCharTokens = func() [256]cjsonTokenType {
	var t [256]cjsonTokenType
	for i := range t {
		t[i] = cjsonTokError
	}
	t['{'], t['}'], t['['], t[']'] = cjsonTokObjBegin, cjsonTokObjEnd, cjsonTokArrBegin, cjsonTokArrEnd
	t[','], t[':'], t[0] = cjsonTokComma, cjsonTokColon, cjsonTokEnd
	t[' '], t['\t'], t['\n'], t['\r'] = cjsonTokWhitespace, cjsonTokWhitespace, cjsonTokWhitespace, cjsonTokWhitespace
	for _, c := range "fiInNt\"+-0123456789" {
		t[c] = cjsonTokUnknown
	}
	return t
}()

var cjsonEscapeChars = func() [256]byte {
	var t [256]byte
	t['"'], t['\\'], t['/'], t['b'], t['t'] = '"', '\\', '/', '\b', '\t'
	t['n'], t['f'], t['r'], t['u'] = '\n', '\f', '\r', 'u'
	return t
}()

type cjsonToken struct {
	typ    cjsonTokenType
	index  int
	str    string // the string of cjsonTokString, the error of cjsonTokError
	number float64
	bool   bool
}

// cjsonParser is json_parse_t. data ends where the input's first NUL is;
// at returns 0 past it, as reading the C string would.
type cjsonParser struct {
	L     *lua.LState
	cfg   *cjsonConfig
	null  *lua.LUserData
	data  string
	pos   int
	depth int
	slots int
	tmp   []byte
}

func (p *cjsonParser) at(i int) byte {
	if i < len(p.data) {
		return p.data[i]
	}
	return 0
}

func cjsonDecode(L *lua.LState, cfg *cjsonConfig, null *lua.LUserData) int {
	if L.GetTop() != 1 {
		capiArgError(L, 1, "expected 1 argument")
	}
	s := capiCheckLString(L, 1)
	if len(s) >= 2 && (s[0] == 0 || s[1] == 0) {
		capiRaise(L, "JSON parser does not support UTF-16 or UTF-32")
	}
	p := &cjsonParser{L: L, cfg: cfg, null: null, data: cStringPrefix(s), slots: 1}
	var tok cjsonToken
	p.nextToken(&tok)
	v := p.processValue(&tok)
	p.nextToken(&tok)
	if tok.typ != cjsonTokEnd {
		p.throw("the end", &tok)
	}
	L.Push(v)
	return 1
}

func (p *cjsonParser) setError(tok *cjsonToken, msg string) {
	tok.typ = cjsonTokError
	tok.index = p.pos
	tok.str = msg
}

func (p *cjsonParser) throw(expected string, tok *cjsonToken) {
	found := cjsonTokenNames[tok.typ]
	if tok.typ == cjsonTokError {
		found = tok.str
	}
	capiRaise(p.L, "Expected %s but found %s at character %d", expected, found, tok.index+1)
}

func (p *cjsonParser) nextToken(tok *cjsonToken) {
	var ch byte
	for {
		ch = p.at(p.pos)
		tok.typ = cjsonCharTokens[ch]
		if tok.typ != cjsonTokWhitespace {
			break
		}
		p.pos++
	}
	tok.index = p.pos
	switch tok.typ {
	case cjsonTokError:
		p.setError(tok, "invalid token")
		return
	case cjsonTokEnd:
		return
	case cjsonTokUnknown:
	default:
		p.pos++
		return
	}
	rest := p.data[p.pos:]
	switch {
	case ch == '"':
		p.nextString(tok)
	case ch == '-' || cIsDigit(ch):
		if p.cfg.decodeInvalidNumbers == 0 && p.isInvalidNumber() {
			p.setError(tok, "invalid number")
			return
		}
		p.nextNumber(tok)
	case strings.HasPrefix(rest, "true"):
		tok.typ, tok.bool = cjsonTokBoolean, true
		p.pos += 4
	case strings.HasPrefix(rest, "false"):
		tok.typ, tok.bool = cjsonTokBoolean, false
		p.pos += 5
	case strings.HasPrefix(rest, "null"):
		tok.typ = cjsonTokNull
		p.pos += 4
	case p.cfg.decodeInvalidNumbers != 0 && p.isInvalidNumber():
		p.nextNumber(tok)
	default:
		p.setError(tok, "invalid token")
	}
}

// isInvalidNumber is json_is_invalid_number: what strtod accepts but JSON
// does not (a leading '+', hexadecimal, leading zeros, inf, nan).
func (p *cjsonParser) isInvalidNumber() bool {
	i := p.pos
	if p.at(i) == '+' {
		return true
	}
	if p.at(i) == '-' {
		i++
	}
	if c := p.at(i); c == '0' {
		c2 := p.at(i + 1)
		return c2|0x20 == 'x' || cIsDigit(c2)
	} else if int8(c) <= '9' { // a signed char in C
		return false
	}
	rest := p.data[min(i, len(p.data)):]
	return cHasPrefixFold(rest, "inf") || cHasPrefixFold(rest, "nan")
}

func (p *cjsonParser) nextNumber(tok *cjsonToken) {
	v, n := cStrtod(p.data[p.pos:])
	tok.typ = cjsonTokNumber
	tok.number = v
	if n == 0 {
		p.setError(tok, "invalid number")
		return
	}
	p.pos += n
}

func (p *cjsonParser) nextString(tok *cjsonToken) {
	p.pos++ // the opening quote
	p.tmp = p.tmp[:0]
	for {
		ch := p.at(p.pos)
		if ch == '"' {
			break
		}
		if ch == 0 {
			p.setError(tok, "unexpected end of string")
			return
		}
		if ch == '\\' {
			ch = cjsonEscapeChars[p.at(p.pos+1)]
			if ch == 'u' {
				if p.appendUnicodeEscape() {
					continue
				}
				p.setError(tok, "invalid unicode escape code")
				return
			}
			if ch == 0 {
				p.setError(tok, "invalid escape code")
				return
			}
			p.pos++
		}
		p.tmp = append(p.tmp, ch)
		p.pos++
	}
	p.pos++ // the closing quote
	tok.typ = cjsonTokString
	tok.str = string(p.tmp)
}

func (p *cjsonParser) hex4(i int) int {
	v := 0
	for j := 0; j < 4; j++ {
		c := p.at(i + j)
		var d int
		switch {
		case cIsDigit(c):
			d = int(c - '0')
		case (c|0x20) >= 'a' && (c|0x20) <= 'f':
			d = int(c|0x20-'a') + 10
		default:
			return -1
		}
		v = v<<4 | d
	}
	return v
}

// appendUnicodeEscape is json_append_unicode_escape: \uXXXX, or a surrogate
// pair of them, as UTF-8.
func (p *cjsonParser) appendUnicodeEscape() bool {
	escapeLen := 6
	cp := p.hex4(p.pos + 2)
	if cp < 0 {
		return false
	}
	if cp&0xF800 == 0xD800 {
		if cp&0x400 != 0 {
			return false
		}
		if p.at(p.pos+6) != '\\' || p.at(p.pos+7) != 'u' {
			return false
		}
		low := p.hex4(p.pos + 8)
		if low < 0 || low&0xFC00 != 0xDC00 {
			return false
		}
		cp = ((cp&0x3FF)<<10 | low&0x3FF) + 0x10000
		escapeLen = 12
	}
	switch {
	case cp <= 0x7F:
		p.tmp = append(p.tmp, byte(cp))
	case cp <= 0x7FF:
		p.tmp = append(p.tmp, byte(cp>>6|0xC0), byte(cp&0x3F|0x80))
	case cp <= 0xFFFF:
		p.tmp = append(p.tmp, byte(cp>>12|0xE0), byte(cp>>6&0x3F|0x80), byte(cp&0x3F|0x80))
	default:
		p.tmp = append(p.tmp, byte(cp>>18|0xF0), byte(cp>>12&0x3F|0x80), byte(cp>>6&0x3F|0x80), byte(cp&0x3F|0x80))
	}
	p.pos += escapeLen
	return true
}

// descend is json_decode_descend: one more level, within decode_max_depth
// and within the C function's stack (slots more values).
func (p *cjsonParser) descend(slots int) {
	p.depth++
	if p.depth <= p.cfg.decodeMaxDepth && p.slots+slots <= capiCStackLimit {
		return
	}
	capiRaise(p.L, "Found too many nested data structures (%d) at character %d", p.depth, p.pos)
}

func (p *cjsonParser) processValue(tok *cjsonToken) lua.LValue {
	switch tok.typ {
	case cjsonTokString:
		return lua.LString(tok.str)
	case cjsonTokNumber:
		return lua.LNumber(tok.number)
	case cjsonTokBoolean:
		return lua.LBool(tok.bool)
	case cjsonTokObjBegin:
		return p.parseObject()
	case cjsonTokArrBegin:
		return p.parseArray()
	case cjsonTokNull:
		return p.null
	}
	p.throw("value", tok)
	return nil
}

func (p *cjsonParser) parseObject() lua.LValue {
	p.descend(3)
	// Small first sizes: gopher-lua's default (32 array slots, a 32-entry
	// map) costs more than most decoded tables hold; they grow as needed.
	t := p.L.CreateTable(0, 4)
	p.slots += 2 // the table, and a key while its value is parsed
	defer func() { p.slots -= 2 }()
	var tok cjsonToken
	p.nextToken(&tok)
	if tok.typ == cjsonTokObjEnd {
		p.depth--
		return t
	}
	for {
		if tok.typ != cjsonTokString {
			p.throw("object key string", &tok)
		}
		key := lua.LString(tok.str)
		p.nextToken(&tok)
		if tok.typ != cjsonTokColon {
			p.throw("colon", &tok)
		}
		p.nextToken(&tok)
		t.RawSet(key, p.processValue(&tok))
		p.nextToken(&tok)
		if tok.typ == cjsonTokObjEnd {
			p.depth--
			return t
		}
		if tok.typ != cjsonTokComma {
			p.throw("comma or object end", &tok)
		}
		p.nextToken(&tok)
	}
}

func (p *cjsonParser) parseArray() lua.LValue {
	p.descend(2)
	t := p.L.CreateTable(4, 0)
	p.slots++ // the table
	defer func() { p.slots-- }()
	var tok cjsonToken
	p.nextToken(&tok)
	if tok.typ == cjsonTokArrEnd {
		p.depth--
		return t
	}
	for i := 1; ; i++ {
		t.RawSetInt(i, p.processValue(&tok))
		p.nextToken(&tok)
		if tok.typ == cjsonTokArrEnd {
			p.depth--
			return t
		}
		if tok.typ != cjsonTokComma {
			p.throw("comma or array end", &tok)
		}
		p.nextToken(&tok)
	}
}
