package tool

import "testing"

// Escape sequences reported from real tool output: SGR colours whose ESC
// byte was lost on the way ("[32mok[0m", "?[32m" where a pipe replaced ESC
// with "?"), and an OSC colour query with no BEL/ST that leaked its
// payload to the model.
func TestCleanOutputStripsBrokenEscapes(t *testing.T) {
	cases := []struct{ in, want string }{
		{"[32mok[0m", "ok"},
		{"?[32mPASS?[0m tests", "PASS tests"},
		{"[1;31merror[0m: x", "error: x"},
		{"\x1b]11;rgb:0000/0000/0000\nnext line", "\nnext line"},
		{"\x1b]0;title\x07text", "text"},
		{"\x1b[31mred\x1b[0m", "red"},
		{"arr[0] = x[i]; [m] [see 1]", "arr[0] = x[i]; [m] [see 1]"},
	}
	for _, c := range cases {
		if got := cleanOutput([]byte(c.in), "", nil); got != c.want {
			t.Errorf("cleanOutput(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestNonUTF8OutputKeepsItsBytes: GBK "你好" (c4 e3 ba c3) is decoded with
// the command's charset when known, else its bytes are shown escaped,
// never collapsed into one U+FFFD.
func TestNonUTF8OutputKeepsItsBytes(t *testing.T) {
	gbk := []byte{0xc4, 0xe3, 0xba, 0xc3, '\n'}
	if got := cleanOutput(gbk, "", nil); got != `\xc4\xe3\xba\xc3`+"\n" {
		t.Errorf("unknown charset: %q", got)
	}
	for _, cs := range []string{"GBK", "gb18030", "GB2312"} {
		if got := cleanOutput(gbk, cs, nil); got != "你好\n" {
			t.Errorf("charset %s: %q", cs, got)
		}
	}
	if got := cleanOutput([]byte("caf\xe9"), "UTF-8", nil); got != `caf\xe9` {
		t.Errorf("invalid UTF-8 under a UTF-8 locale: %q", got)
	}
	for cmd, want := range map[string]string{
		"LC_ALL=zh_CN.GBK ls":                           "GBK",
		"export LANG=ja_JP.SJIS; LC_CTYPE=x.EUC-JP cat": "EUC-JP",
		"echo LANG=x.latin1":                            "", // not an assignment of the command
		"ls":                                            "fallback",
	} {
		if got := commandCharset(cmd, "fallback"); got != want && !(want == "" && got == "fallback") {
			t.Errorf("commandCharset(%q) = %q, want %q", cmd, got, want)
		}
	}
	env := map[string]string{"LANG": "zh_CN.GB18030@stroke"}
	if got := LocaleCharset(func(k string) string { return env[k] }); got != "GB18030" {
		t.Errorf("LocaleCharset = %q", got)
	}
}
