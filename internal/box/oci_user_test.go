package box

import "testing"

// The image's /etc/passwd and /etc/group lines resolve User names; junk
// lines and non-numeric ids are skipped, the first match wins.
func TestParseAccountLine(t *testing.T) {
	passwd := []byte("root:x:0:0:root:/root:/bin/sh\nbroken\nodd:x:abc:1::/:/bin/sh\nhermes:x:1000:1001:Hermes:/home/hermes:/bin/sh\nhermes:x:2000:2000::/:/bin/sh\n")
	cases := []struct {
		col       int
		key       string
		id, gid   uint32
		wantFound bool
	}{
		{0, "hermes", 1000, 1001, true},
		{2, "1000", 1000, 1001, true},
		{0, "odd", 0, 0, false},
		{0, "nobody", 0, 0, false},
		{0, "broken", 0, 0, false},
	}
	for _, c := range cases {
		e, ok, err := parseAccountLine(passwd, c.col, c.key)
		if err != nil || ok != c.wantFound || (ok && (e.id != c.id || e.gid != c.gid)) {
			t.Errorf("passwd col %d %q: %+v %v %v", c.col, c.key, e, ok, err)
		}
	}
	e, ok, err := parseAccountLine([]byte("staff:x:50:hermes,other\n"), 0, "staff")
	if err != nil || !ok || e.id != 50 {
		t.Errorf("group staff: %+v %v %v", e, ok, err)
	}
}
