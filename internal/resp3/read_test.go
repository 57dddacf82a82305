package resp3

import "testing"

func TestValid(t *testing.T) {
	good := []string{
		"+OK\r\n", "-ERR x\r\n", ":-12\r\n", "$0\r\n\r\n", "$3\r\na\r\n\r\n", "_\r\n", "#t\r\n", ",1.5\r\n", "(123\r\n",
		"=7\r\ntxt:abc\r\n", "*0\r\n", "*2\r\n:1\r\n*1\r\n_\r\n", "%1\r\n+k\r\n:1\r\n", "~2\r\n:1\r\n:2\r\n",
	}
	for _, g := range good {
		if !Valid([]byte(g)) {
			t.Errorf("Valid(%q) = false", g)
		}
	}
	bad := []string{
		"", "+OK", "+OK\r\n+OK\r\n", "$4\r\nabc\r\n", "$-1\r\n", "*2\r\n:1\r\n", "*99999999\r\n:1\r\n", "%1\r\n+k\r\n",
		"#x\r\n", "_x\r\n", "=3\r\ntxt\r\n", "?\r\n", "*-1\r\n", "$1x\r\nab\r\n", "*12345678901\r\n",
	}
	for _, b := range bad {
		if Valid([]byte(b)) {
			t.Errorf("Valid(%q) = true", b)
		}
	}
}

func TestValidDepth(t *testing.T) {
	var b []byte
	for range MaxDepth + 2 {
		b = append(b, "*1\r\n"...)
	}
	b = append(b, ":1\r\n"...)
	if Valid(b) {
		t.Error("a reply nested past MaxDepth is valid")
	}
}

func FuzzValid(f *testing.F) {
	f.Add([]byte("*2\r\n:1\r\n%1\r\n+k\r\n$1\r\nv\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if Valid(b) {
			if rest, ok := Skip(b); !ok || len(rest) != 0 {
				t.Fatalf("Valid but Skip = %q, %v", rest, ok)
			}
		}
	})
}
