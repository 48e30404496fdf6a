package egress

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/hermes-go/hermes/internal/atomicfile"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Secret is a value the box may use only through a placeholder, on
// requests to Hosts (exact hosts or *.suffix patterns). Its String and
// GoString never show the value.
type Secret struct {
	Name  string   // environment variable name inside the box
	Value string   // the real value; stays on the host
	Hosts []string // hosts where the placeholder is swapped for Value
}

// String shows the name and hosts, never the value.
func (s Secret) String() string {
	return s.Name + " (hosts " + strings.Join(s.Hosts, ",") + ")"
}

// GoString is String, so %#v does not print the value either.
func (s Secret) GoString() string { return "egress.Secret{" + s.String() + "}" }

// ValidateSecretName checks that name is an environment variable name
// ([A-Za-z_][A-Za-z0-9_]*) that the gate does not set itself.
func ValidateSecretName(name string) error {
	if !regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`).MatchString(name) {
		return fmt.Errorf("secret name %q: must be an environment variable name (letters, digits, _; not starting with a digit), e.g. OPENAI_API_KEY", name)
	}
	if reservedEnv(name) {
		return fmt.Errorf("secret name %q: the box proxy sets this variable itself; pick another name", name)
	}
	return nil
}

func (s Secret) validate() error {
	if err := ValidateSecretName(s.Name); err != nil {
		return err
	}
	if s.Value == "" {
		return fmt.Errorf("secret %s: empty value", s.Name)
	}
	if len(s.Hosts) == 0 {
		return fmt.Errorf("secret %s: no hosts; give --hosts api.example.com[,*.example.com]", s.Name)
	}
	for _, h := range s.Hosts {
		if _, err := ParseHostPattern(h); err != nil {
			return fmt.Errorf("secret %s: %w", s.Name, err)
		}
	}
	return nil
}

// SecretsPath is the secrets store of HERMES_HOME: home/secrets/secrets.json
// (mode 0600, directory 0700).
func SecretsPath(home string) string { return filepath.Join(home, "secrets", "secrets.json") }

// secretsFile is the on-disk form of the store.
type secretsFile struct {
	Version int                     `json:"version"`
	Secrets map[string]storedSecret `json:"secrets"`
}

type storedSecret struct {
	Value string   `json:"value"`
	Hosts []string `json:"hosts"`
}

// LoadSecrets reads the store of home, sorted by name; a missing store is
// empty. A store readable by others is refused (fix: chmod 600 FILE).
func LoadSecrets(home string) ([]Secret, error) {
	path := SecretsPath(home)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s: mode %o lets other users read secrets; fix with chmod 600 %s", path, st.Mode().Perm(), path)
	}
	var f secretsFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %v (fix or remove the file, then set the secrets again)", path, err)
	}
	var out []Secret
	for name, s := range f.Secrets {
		out = append(out, Secret{Name: name, Value: s.Value, Hosts: s.Hosts})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// SetSecret adds or replaces s in the store of home, atomically.
func SetSecret(home string, s Secret) error {
	if err := s.validate(); err != nil {
		return err
	}
	all, err := LoadSecrets(home)
	if err != nil {
		return err
	}
	kept := all[:0]
	for _, o := range all {
		if o.Name != s.Name {
			kept = append(kept, o)
		}
	}
	return saveSecrets(home, append(kept, s))
}

// RemoveSecret deletes name from the store of home; it is an error naming
// the store when there is no such secret.
func RemoveSecret(home, name string) error {
	all, err := LoadSecrets(home)
	if err != nil {
		return err
	}
	kept := all[:0]
	for _, o := range all {
		if o.Name != name {
			kept = append(kept, o)
		}
	}
	if len(kept) == len(all) {
		return fmt.Errorf("no secret %q in %s (see `hermes secrets list`)", name, SecretsPath(home))
	}
	return saveSecrets(home, kept)
}

func saveSecrets(home string, all []Secret) error {
	f := secretsFile{Version: 1, Secrets: map[string]storedSecret{}}
	for _, s := range all {
		f.Secrets[s.Name] = storedSecret{Value: s.Value, Hosts: s.Hosts}
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	path := SecretsPath(home)
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'), 0o600)
}
