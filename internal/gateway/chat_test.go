package gateway

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestSessionKeysFollowHermes(t *testing.T) {
	cases := []struct {
		in   Incoming
		want string
	}{
		{Incoming{Channel: "42", User: "42", DM: true}, "agent:main:telegram:dm:42"},
		{Incoming{Channel: "-100", User: "7"}, "agent:main:telegram:group:-100:7"},
		{Incoming{Channel: "-100", Thread: "9", User: "7"}, "agent:main:telegram:group:-100:9"},
		{Incoming{Channel: "-100", Thread: "9", User: "8"}, "agent:main:telegram:group:-100:9"},
	}
	for _, c := range cases {
		if got := SessionKey("telegram", c.in); got != c.want {
			t.Errorf("%+v: %s, want %s", c.in, got, c.want)
		}
	}
}

func TestAuthorizationChain(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	a := AuthorizationFromEnv("discord", env(map[string]string{"DISCORD_ALLOWED_USERS": "1, 2", "GATEWAY_ALLOWED_USERS": "3"}))
	if !a.Allows("1") || !a.Allows("2") || a.Allows("3") {
		t.Fatalf("platform list must win over the gateway list: %+v", a)
	}
	a = AuthorizationFromEnv("discord", env(map[string]string{"GATEWAY_ALLOWED_USERS": "3"}))
	if !a.Allows("3") || a.Allows("1") {
		t.Fatalf("gateway list: %+v", a)
	}
	if a := AuthorizationFromEnv("slack", env(nil)); a.Allows("U1") {
		t.Fatal("nothing configured must deny")
	}
	if a := AuthorizationFromEnv("slack", env(map[string]string{"GATEWAY_ALLOW_ALL_USERS": "true"})); !a.Allows("U1") {
		t.Fatal("GATEWAY_ALLOW_ALL_USERS must allow")
	}
}

func TestOutboxPersistsAndRestartRetriesAtOnce(t *testing.T) {
	home := t.TempDir()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	o, err := openOutbox(home, "slack", clock)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.add("C1", []OutMessage{{Text: "a"}, {Text: "b"}}, time.Hour); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(home, "gateway", "undelivered-slack.json")
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("kept file: %v %v", fi, err)
	}
	if len(o.due()) != 0 {
		t.Fatal("due before its retry time")
	}
	o2, err := openOutbox(home, "slack", clock)
	if err != nil {
		t.Fatal(err)
	}
	due := o2.due()
	if len(due) != 1 || len(due[0].Parts) != 2 || due[0].Chat != "C1" {
		t.Fatalf("after restart: %+v", due)
	}
	if err := o2.update(due[0].ID, nil, time.Time{}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatal("the file stays after everything was delivered")
	}
}

func TestOutboxRefusesBrokenFile(t *testing.T) {
	home := t.TempDir()
	_ = os.MkdirAll(filepath.Join(home, "gateway"), 0o700)
	_ = os.WriteFile(filepath.Join(home, "gateway", "undelivered-discord.json"), []byte("{"), 0o600)
	if _, err := openOutbox(home, "discord", time.Now); err == nil {
		t.Fatal("a broken file must not be overwritten silently")
	}
}
