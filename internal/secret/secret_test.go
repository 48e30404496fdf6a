package secret

import "testing"

// One table for every caller: config, the local backend and redaction all
// ask IsName, so FAL_KEY & co. are secret everywhere (issue 8 "Secrets").
func TestIsName(t *testing.T) {
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"OPENAI_API_KEY", true}, {"OPENROUTER_API_KEY", true}, {"ANTHROPIC_API_KEY", true},
		{"ANTHROPIC_AUTH_TOKEN", true}, {"HF_TOKEN", true}, {"GH_TOKEN", true}, {"GITHUB_TOKEN", true},
		{"FAL_KEY", true}, {"MODAL_TOKEN_ID", true}, {"MODAL_TOKEN_SECRET", true},
		{"AWS_ACCESS_KEY_ID", true}, {"AWS_SECRET_ACCESS_KEY", true}, {"AWS_SESSION_TOKEN", true},
		{"SUDO_PASSWORD", true}, {"DB_PASSWD", true}, {"GOOGLE_APPLICATION_CREDENTIALS", true},
		{"STRIPE_SECRET_KEY", true}, {"SSH_PRIVATE_KEY", true}, {"MY_APIKEY", true},
		{"API_KEY", true}, {"TOKEN", true}, {"SECRET", true}, {"openai_api_key", true},
		{"model.api_key", true}, {"MODEL_API_KEY", true}, {"API_SERVER_KEY", true},
		{"PATH", false}, {"HOME", false}, {"OPENAI_BASE_URL", false}, {"model.default", false},
		{"TERMINAL_ENV", false}, {"terminal.timeout", false}, {"TOKENIZERS_PARALLELISM", false},
		{"SSH_AUTH_SOCK", false}, {"KEYBOARD", false}, {"GOFLAGS", false}, {"", false},
	} {
		if got := IsName(tc.name); got != tc.want {
			t.Errorf("IsName(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}
