package scripting

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// cjson.decode, as lua_cjson.c decodes: its tokenizer (strtod for numbers,
// so hexadecimal, inf and nan pass unless decode_invalid_numbers is off), its
// error texts ("Expected value but found invalid token at character 1"), its
// depth limit, and a NUL byte ending the text as it ends a C string.

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
