package commands

import (
	"strings"
	"testing"

	"github.com/redcell/redcell/request"
)

// cString is what C's "%s" / "%.*s" print of an argument: the bytes up to
// the first NUL.
func cString(b []byte) []byte {
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		return b[:i]
	}
	return b
}

// refUnknownCommand is Redis 7's text (server.c, commandCheckExistence):
//
//	for (i = 1; i < c->argc && sdslen(args) < 128; i++)
//	    args = sdscatprintf(args, "'%.*s' ", 128-(int)sdslen(args), argv[i]);
//	err = sdscatprintf(err, "unknown command '%.128s', with args beginning with: %s", argv[0], args);
//	sdsmapchars(err, "\r\n", "  ", 2);
//
// so the name and each argument end at their first NUL, and CR/LF anywhere
// become spaces (nothing is trimmed).
func refUnknownCommand(argv [][]byte) string {
	var args []byte
	for i := 1; i < len(argv) && len(args) < 128; i++ {
		a := cString(argv[i])
		a = a[:min(len(a), 128-len(args))]
		args = append(append(append(args, '\''), a...), '\'', ' ')
	}
	name := cString(argv[0])
	name = name[:min(len(name), 128)]
	s := "ERR unknown command '" + string(name) + "', with args beginning with: " + string(args)
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
}

func TestUnknownCommand(t *testing.T) {
	long := strings.Repeat("n", 200)
	a100, b100 := strings.Repeat("a", 100), strings.Repeat("b", 100)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"FOO", "bar"}, "ERR unknown command 'FOO', with args beginning with: 'bar' "},
		{[]string{"FOO"}, "ERR unknown command 'FOO', with args beginning with: "},
		{[]string{""}, "ERR unknown command '', with args beginning with: "},
		{[]string{long, "x"}, "ERR unknown command '" + long[:128] + "', with args beginning with: 'x' "},
		{[]string{"f", a100, b100, "c"}, "ERR unknown command 'f', with args beginning with: '" + a100 + "' '" + b100[:25] + "' "},
		{[]string{"f", strings.Repeat("a", 125), "b", "c"}, "ERR unknown command 'f', with args beginning with: '" + strings.Repeat("a", 125) + "' "},
		{[]string{"f", strings.Repeat("a", 124), "bcd", "e"}, "ERR unknown command 'f', with args beginning with: '" + strings.Repeat("a", 124) + "' 'b' "},
		{[]string{"f", "a", "", "b"}, "ERR unknown command 'f', with args beginning with: 'a' '' 'b' "},
		{[]string{"f\r\n", "x\ny", "\r"}, "ERR unknown command 'f  ', with args beginning with: 'x y' ' ' "},
		// C strings end at a NUL: each of the name and the arguments is cut
		// there on its own; the rest of the message stays.
		{[]string{"FOO\x00BAR", "bar"}, "ERR unknown command 'FOO', with args beginning with: 'bar' "},
		{[]string{"FOO", "a\x00b", "c"}, "ERR unknown command 'FOO', with args beginning with: 'a' 'c' "},
		{[]string{"FOO", "\x00", "c"}, "ERR unknown command 'FOO', with args beginning with: '' 'c' "},
	}
	for _, tt := range tests {
		args := argv(tt.args...)
		if ref := refUnknownCommand(args); ref != tt.want {
			t.Errorf("reference(%q) = %q, want %q (the reference is wrong)", tt.args, ref, tt.want)
		}
		if got := UnknownCommand(args); got != tt.want {
			t.Errorf("UnknownCommand(%q)\n got  %q\n want %q", tt.args, got, tt.want)
		}
	}
}

func FuzzUnknownCommand(f *testing.F) {
	f.Add([]byte("FOO"), []byte("bar"), []byte(strings.Repeat("x", 130)), uint8(3))
	f.Fuzz(func(t *testing.T, name, a, b []byte, n uint8) {
		args := [][]byte{name}
		for i := 0; i < int(n%8); i++ {
			args = append(args, a, b)
		}
		if got, want := UnknownCommand(args), refUnknownCommand(args); got != want {
			t.Fatalf("UnknownCommand(%q)\n got  %q\n want %q", args, got, want)
		}
	})
}

// TestUnknownSubcommand: Redis's "unknown subcommand '%.128s'. Try %s HELP."
// then CR/LF to spaces.
func TestUnknownSubcommand(t *testing.T) {
	tests := []struct{ sub, want string }{
		{"X", "ERR unknown subcommand 'X'. Try CLIENT HELP."},
		{"setName", "ERR unknown subcommand 'setName'. Try CLIENT HELP."},
		{strings.Repeat("s", 200), "ERR unknown subcommand '" + strings.Repeat("s", 128) + "'. Try CLIENT HELP."},
		{"a\x00b", "ERR unknown subcommand 'a'. Try CLIENT HELP."},
		{"a\r\nb", "ERR unknown subcommand 'a  b'. Try CLIENT HELP."},
		{"\nX\r", "ERR unknown subcommand ' X '. Try CLIENT HELP."}, // mapped, not trimmed
	}
	for _, tt := range tests {
		if got := UnknownSubcommand([]byte(tt.sub), "CLIENT"); got != tt.want {
			t.Errorf("UnknownSubcommand(%q)\n got  %q\n want %q", tt.sub, got, tt.want)
		}
	}
}

// TestSanitizeErrorText: Redis's addReplyErrorFormat rule, which the spec
// fixes for the CL.THROTTLE echo: stop at NUL, trim CR/LF at both ends, map
// inner CR/LF to spaces.
func TestSanitizeErrorText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"abc", "abc"},
		{"", ""},
		{"a\x00b", "a"},
		{"\x00", ""},
		{"\r\n", ""},
		{"\r\nab\r\n", "ab"},
		{"\n\rab\n\r", "ab"},
		{"a\rb", "a b"},
		{"a\r\nb", "a  b"},
		{" a ", " a "},
		{"\ta\t", "\ta\t"},
		{"\r\na\x00\r\n", "a"},
		{"é\xff", "é\xff"},
		{"\xff\rx", "\xff x"}, // bytes, not runes: invalid UTF-8 is kept as it is
		{"\xd2\r\n\xd2", "\xd2  \xd2"},
	}
	for _, tt := range tests {
		if got := SanitizeErrorText([]byte(tt.in)); got != tt.want {
			t.Errorf("SanitizeErrorText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestErrorTextsAreSpecVerbatim pins the texts the spec quotes.
func TestErrorTextsAreSpecVerbatim(t *testing.T) {
	for got, want := range map[string]string{
		ErrNoProto:                          "NOPROTO unsupported protocol version",
		ErrProtoNotInt:                      "ERR Protocol version is not an integer or out of range",
		ErrNoAuth:                           "NOAUTH Authentication required.",
		ErrWrongPass:                        "WRONGPASS invalid username-password pair or user is disabled.",
		ErrAuthNoPass:                       "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?",
		ErrDBIndex:                          "ERR DB index is out of range",
		ErrClientName:                       "ERR Client names cannot contain spaces, newlines or special characters.",
		ResultErrText(request.ErrWrongType): "WRONGTYPE Operation against a key holding the wrong kind of value",
		ErrInvalidSlot:                      "ERR Invalid slot",
		ErrInvalidSlotOrCount:               "ERR Invalid slot or number of keys",
		ErrNotAMaster:                       "ERR The specified node is not a master",
		ErrGetKeysNoCommand:                 "ERR Invalid command specified",
		ErrGetKeysNoKeys:                    "ERR The command has no key arguments",
		ErrGetKeysArity:                     "ERR Invalid number of arguments specified for command",
		ErrGetKeysInvalid:                   "ERR Invalid arguments specified for command",
		ErrDebugDisabled:                    "ERR DEBUG command not allowed",
		ErrCellZero:                         "Cell error: Store error: Zero rates are not supported",
		ResultErrText(request.ErrExpire):    "Cell error: Store error: Error while setting key expire",
		CellUsage("cl.throttle"):            "Cell error: Store error: Usage: cl.throttle <key> <max_burst> <count per period> <period> [<quantity>]",
		CellNotInteger([]byte("1.5")):       "Cell error: Store error: Couldn't parse as integer: 1.5",
		// Sanitised on the whole message: a leading CR/LF is inside it
		// (a space, two in all after the colon), a trailing one is trimmed,
		// a NUL cuts the rest.
		CellNotInteger([]byte("\n5")):      "Cell error: Store error: Couldn't parse as integer:  5",
		CellNotInteger([]byte("\r\n5")):    "Cell error: Store error: Couldn't parse as integer:   5",
		CellNotInteger([]byte("5\n")):      "Cell error: Store error: Couldn't parse as integer: 5",
		CellNotInteger([]byte("\n5\r\n")):  "Cell error: Store error: Couldn't parse as integer:  5",
		CellNotInteger([]byte("1\r2\n3")):  "Cell error: Store error: Couldn't parse as integer: 1 2 3",
		CellNotInteger([]byte("7\x00\n8")): "Cell error: Store error: Couldn't parse as integer: 7",
		CellNotInteger([]byte("\x00abc")):  "Cell error: Store error: Couldn't parse as integer: ",
		CellNotInteger([]byte("\n")):       "Cell error: Store error: Couldn't parse as integer: ",
		CellNotInteger([]byte("")):         "Cell error: Store error: Couldn't parse as integer: ",
		WrongArgs("client|setname"):        "ERR wrong number of arguments for 'client|setname' command",
	} {
		if got != want {
			t.Errorf("%q, want %q", got, want)
		}
	}
}

// TestAvailabilityTexts: each batch failure has its own reply, with the
// prefix clients act on (CLUSTERDOWN and TRYAGAIN are retried, ERR is not),
// and the unknown outcome says, verbatim, that the write may have happened.
func TestAvailabilityTexts(t *testing.T) {
	texts := map[string]string{
		ErrClusterDown:    "CLUSTERDOWN ",
		ErrNotReady:       "TRYAGAIN ",
		ErrStopped:        "TRYAGAIN ",
		ErrOutcomeUnknown: "TRYAGAIN ",
		ErrInternal:       "ERR ",
	}
	if len(texts) != 5 {
		t.Fatalf("two availability errors share a text")
	}
	for text, prefix := range texts {
		if !strings.HasPrefix(text, prefix) {
			t.Errorf("%q does not start with %q", text, prefix)
		}
	}
	if want := "TRYAGAIN Leadership changed before the write was confirmed: it may or may not have been applied"; ErrOutcomeUnknown != want {
		t.Errorf("ErrOutcomeUnknown = %q, want %q", ErrOutcomeUnknown, want)
	}
	// The removed node's reply is CLUSTERDOWN (nothing happened, this node
	// cannot decide), names the node on one line, and says what to do.
	got := Removed("n3\r\nx")
	if !strings.HasPrefix(got, "CLUSTERDOWN This node (n3  x) was removed from the cluster") || strings.ContainsAny(got, "\r\n") ||
		!strings.Contains(got, "--join") {
		t.Errorf("Removed: %q", got)
	}
}

// TestResultErrorNamesTheFeatureLevel: a request refused for the cluster's
// feature level is answered with the command and both levels (Redcell's
// own text); every other error code with its descriptor's text.
func TestResultErrorNamesTheFeatureLevel(t *testing.T) {
	r := request.Result{Kind: request.KindError, Err: request.ErrFeatureLevel,
		Ints: [5]int64{int64(request.Set), 2, 1}}
	const want = "ERR 'SET' needs cluster feature level 2 (every member must run a build that supports it); the cluster is at level 1"
	if got := ResultError(&r); got != want {
		t.Errorf("ResultError = %q, want %q", got, want)
	}
	wrong := request.Result{Kind: request.KindError, Err: request.ErrWrongType}
	if got := ResultError(&wrong); got != ResultErrText(request.ErrWrongType) {
		t.Errorf("ResultError of WRONGTYPE = %q", got)
	}
}
