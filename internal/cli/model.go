package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/llm/providers"
	"github.com/hermes-go/hermes/internal/llm/providers/preset"
)

// modelOptions are the flags of `hermes model`.
type modelOptions struct {
	provider string
	model    string
	baseURL  string
	apiKey   string
}

// menuProvider is one entry of the `hermes model` provider menu.
type menuProvider struct{ name, about string }

// menuProviders returns the providers `hermes model` offers: the presets
// under their labels ("Vercel AI Gateway"), then custom (replay is chosen
// per run with --provider replay, not saved).
func menuProviders() []menuProvider {
	var out []menuProvider
	for _, p := range preset.All() {
		about := p.Label
		if len(p.KeyEnv) > 0 {
			about += " (" + strings.Join(p.KeyEnv, " or ") + ")"
		}
		out = append(out, menuProvider{p.Slug, about})
	}
	return append(out, menuProvider{"custom", "any OpenAI-compatible endpoint: Ollama, vLLM, llama.cpp, LM Studio"})
}

// menuNames lists the menu's provider names for errors.
func menuNames() string {
	var names []string
	for _, m := range menuProviders() {
		names = append(names, m.name)
	}
	return strings.Join(names, ", ")
}

// newModelCmd is `hermes model`: choose the provider and model and save
// them to config.yaml (model.provider, model.default, model.base_url) and
// the API key to .env (Hermes "cli-commands.md" `hermes model`). On a
// terminal it asks for what the flags leave out; without one the flags are
// required.
func (a *App) newModelCmd() *cobra.Command {
	o := &modelOptions{}
	cmd := &cobra.Command{
		Use:   "model",
		Short: "choose the provider and model and save them to config",
		Args:  cobra.NoArgs,
		RunE:  func(*cobra.Command, []string) error { return a.runModel(o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.provider, "provider", "", "provider slug: openrouter, ai-gateway, anthropic, openai, nous, … or custom (see the menu)")
	f.StringVar(&o.model, "model", "", "model id, e.g. anthropic/claude-sonnet-4 on openrouter")
	f.StringVar(&o.baseURL, "base-url", "", "endpoint URL (required for custom, e.g. http://localhost:11434/v1)")
	f.StringVar(&o.apiKey, "api-key", "", "API key to save in .env (prefer the prompt: flags end up in shell history)")
	return cmd
}

func (a *App) runModel(o *modelOptions) error {
	home := a.Home()
	l, err := a.loadConfig()
	if err != nil {
		return err
	}
	cur := l.Config.Model
	choice := *o
	if a.IsTerminal {
		if err := a.askModel(l, &choice); err != nil {
			return err
		}
	} else if o.provider == "" && o.model == "" {
		return errors.New("no terminal to ask on: pass --provider and --model (and --base-url for custom), " +
			"e.g. hermes model --provider openrouter --model anthropic/claude-sonnet-4")
	}
	if choice.provider == "" {
		choice.provider = cur.Provider
	}
	if !isMenuProvider(choice.provider) {
		return fmt.Errorf("--provider %q: use one of %s", choice.provider, menuNames())
	}
	choice.provider = preset.Canonical(choice.provider)
	if choice.model == "" && choice.provider == cur.Provider {
		choice.model = cur.Default
	}
	if choice.model == "" {
		choice.model = providers.DefaultModel(choice.provider)
	}
	if choice.model == "" {
		return fmt.Errorf("no model chosen: pass --model, e.g. hermes model --provider %s --model MODEL_ID", choice.provider)
	}
	if choice.provider == "custom" && choice.baseURL == "" {
		choice.baseURL = cur.BaseURL
		if choice.baseURL == "" {
			return errors.New("the custom provider needs --base-url, e.g. http://localhost:11434/v1")
		}
	}
	if choice.baseURL != "" {
		if err := config.CheckBaseURL(choice.baseURL); err != nil {
			return fmt.Errorf("--base-url: %w", err)
		}
	}

	// Every value is checked above, so the saves below only fail on I/O.
	steps := [][2]string{{"model.provider", choice.provider}, {"model.default", choice.model}}
	if choice.baseURL != "" {
		steps = append(steps, [2]string{"model.base_url", choice.baseURL})
	}
	for _, s := range steps {
		if err := config.Set(home, s[0], s[1]); err != nil {
			return err
		}
	}
	if choice.baseURL == "" && cur.BaseURL != "" && choice.provider != cur.Provider {
		// A base URL chosen for another provider would send this one's
		// requests to the wrong endpoint.
		if err := config.Unset(home, "model.base_url"); err != nil {
			return err
		}
		fmt.Fprintf(a.Stdout, "Removed model.base_url (%s), which belonged to provider %s\n", cur.BaseURL, cur.Provider)
	}
	if err := a.dropOldKey(home, cur, choice); err != nil {
		return err
	}
	keyNote := ""
	if choice.apiKey != "" {
		keyName := "model.api_key"
		if names := config.ProviderKeyEnv(choice.provider); len(names) > 0 {
			keyName = names[0]
		}
		if err := config.Set(home, keyName, choice.apiKey); err != nil {
			return err
		}
		stored := keyName
		if !config.IsEnvKey(keyName) {
			stored = config.SecretEnvName(keyName)
		}
		keyNote = fmt.Sprintf("API key: %s=%s in %s", stored, config.MaskSecret(choice.apiKey), config.DotEnvPath(home))
	} else if names := config.ProviderKeyEnv(choice.provider); len(names) > 0 && !anySet(l, names) {
		keyNote = fmt.Sprintf("warning: %s is not set; run: hermes config set %s", names[0], names[0])
	}
	fmt.Fprintf(a.Stdout, "Saved provider %s, model %s", choice.provider, choice.model)
	if choice.baseURL != "" {
		fmt.Fprintf(a.Stdout, ", base URL %s", choice.baseURL)
	}
	fmt.Fprintf(a.Stdout, " to %s\n", config.ConfigPath(home))
	if keyNote != "" {
		fmt.Fprintln(a.Stdout, keyNote)
	}
	return nil
}

// dropOldKey removes model.api_key when the provider or its endpoint
// changes and no new key was given: the key was configured for the old
// host, and keeping it would send it to the new one (and hide the new
// provider's own variable, such as OPENROUTER_API_KEY). A key is only ever
// sent to the host it was configured for.
func (a *App) dropOldKey(home string, cur config.ModelConfig, choice modelOptions) error {
	if choice.apiKey != "" && !config.IsEnvKey(providerKeyName(choice.provider)) {
		return nil // replaced by the new key below
	}
	moved := choice.provider != cur.Provider || (choice.baseURL != "" && choice.baseURL != cur.BaseURL)
	if !moved || cur.APIKey == "" {
		return nil
	}
	removed, err := config.UnsetKey(home, "model.api_key")
	if err != nil {
		return err
	}
	if removed {
		where := cur.Provider
		if cur.BaseURL != "" {
			where += " at " + cur.BaseURL
		}
		fmt.Fprintf(a.Stdout, "Removed model.api_key, which was configured for %s\n", where)
	}
	return nil
}

// providerKeyName is where `hermes model` saves a provider's key: its
// variable (OPENROUTER_API_KEY…) or model.api_key for custom.
func providerKeyName(provider string) string {
	if names := config.ProviderKeyEnv(provider); len(names) > 0 {
		return names[0]
	}
	return "model.api_key"
}

// askModel prompts for the provider, model, base URL and API key that the
// flags did not give.
func (a *App) askModel(l *config.Loaded, c *modelOptions) error {
	in := newLineReader(a.Stdin)
	cur := l.Config.Model
	if c.provider == "" {
		menu := menuProviders()
		fmt.Fprintln(a.Stdout, "Providers:")
		for i, p := range menu {
			fmt.Fprintf(a.Stdout, "  %2d) %-15s %s\n", i+1, p.name, p.about)
		}
		for tries := 0; c.provider == ""; tries++ {
			if tries == 3 {
				return errors.New("no provider chosen")
			}
			answer, err := a.ask(in, "Provider", cur.Provider)
			if err != nil {
				return err
			}
			if n, err := strconv.Atoi(answer); err == nil && n >= 1 && n <= len(menu) {
				answer = menu[n-1].name
			}
			if isMenuProvider(answer) {
				c.provider = answer
			} else {
				fmt.Fprintf(a.Stdout, "Type 1-%d or a provider name.\n", len(menu))
			}
		}
	}
	if c.provider == "custom" && c.baseURL == "" {
		for tries := 0; c.baseURL == ""; tries++ {
			if tries == 3 {
				return errors.New("no base URL given")
			}
			answer, err := a.ask(in, "Base URL (e.g. http://localhost:11434/v1)", cur.BaseURL)
			if err != nil {
				return err
			}
			if err := config.CheckBaseURL(answer); err != nil {
				fmt.Fprintln(a.Stdout, err)
				continue
			}
			c.baseURL = answer
		}
	}
	if c.apiKey == "" {
		names := config.ProviderKeyEnv(c.provider)
		switch {
		case len(names) > 0 && !anySet(l, names):
			key, err := a.readSecret(in, names[0]+" (input hidden, Enter to skip): ")
			if err != nil {
				return err
			}
			c.apiKey = key
		case c.provider == "custom" && cur.APIKey == "":
			key, err := a.readSecret(in, "API key for the endpoint (input hidden, Enter if none): ")
			if err != nil {
				return err
			}
			c.apiKey = key
		}
	}
	return a.askModelID(in, l, c)
}

// modelListMax bounds the models the wizard prints; more can be typed.
const modelListMax = 30

// askModelID asks for the model id, offering the provider's /models list
// when the endpoint answers (by number or id), else a manual entry.
func (a *App) askModelID(in *lineReader, l *config.Loaded, c *modelOptions) error {
	if c.model != "" {
		return nil
	}
	cur := l.Config.Model
	def := providers.DefaultModel(c.provider)
	if c.provider == cur.Provider && cur.Default != "" {
		def = cur.Default
	}
	key := c.apiKey
	if key == "" && c.provider == cur.Provider {
		key = cur.APIKey
	}
	models, err := providers.ListModels(context.Background(), providers.Options{Provider: c.provider, BaseURL: c.baseURL, APIKey: key, Getenv: l.Getenv}, 5*time.Second)
	switch {
	case err != nil:
		fmt.Fprintf(a.Stdout, "Could not list the models (%v); type the model id.\n", err)
	case len(models) == 0:
		fmt.Fprintln(a.Stdout, "The provider lists no models; type the model id.")
	default:
		fmt.Fprintf(a.Stdout, "Models (%d):\n", len(models))
		for i, m := range models[:min(len(models), modelListMax)] {
			fmt.Fprintf(a.Stdout, "  %2d) %s\n", i+1, m)
		}
		if len(models) > modelListMax {
			fmt.Fprintf(a.Stdout, "  … %d more: type any model id\n", len(models)-modelListMax)
		}
	}
	for tries := 0; c.model == ""; tries++ {
		if tries == 3 {
			return errors.New("no model chosen")
		}
		answer, err := a.ask(in, "Model (number or id)", def)
		if err != nil {
			return err
		}
		if n, err := strconv.Atoi(answer); err == nil && n >= 1 && n <= min(len(models), modelListMax) {
			answer = models[n-1]
		}
		c.model = answer
	}
	return nil
}

// lineReader reads answers one line at a time; file is set when the input
// is a real file (so a terminal can read a secret without echo).
type lineReader struct {
	r    *bufio.Reader
	file *os.File
}

func newLineReader(r io.Reader) *lineReader {
	f, _ := r.(*os.File)
	return &lineReader{r: bufio.NewReader(r), file: f}
}

// line returns the next line without its line ending; io.EOF when the
// input ended before any text.
func (lr *lineReader) line() (string, error) {
	s, err := lr.r.ReadString('\n')
	if err != nil && (err != io.EOF || s == "") {
		return "", err
	}
	return strings.TrimRight(s, "\r\n"), nil
}

// ask prints "label [def]: " and returns the trimmed answer, def when the
// answer is empty.
func (a *App) ask(in *lineReader, label, def string) (string, error) {
	if def != "" {
		fmt.Fprintf(a.Stdout, "%s [%s]: ", label, def)
	} else {
		fmt.Fprintf(a.Stdout, "%s: ", label)
	}
	s, err := in.line()
	if err != nil {
		if err == io.EOF {
			return "", errors.New("input ended before an answer was given")
		}
		return "", err
	}
	if s = strings.TrimSpace(s); s == "" {
		return def, nil
	}
	return s, nil
}

// readSecret prompts and reads one line without echo when the input is a
// terminal (golang.org/x/term), else reads a plain line. The value is never
// printed.
func (a *App) readSecret(in *lineReader, prompt string) (string, error) {
	fmt.Fprint(a.Stdout, prompt)
	if in.file != nil && term.IsTerminal(int(in.file.Fd())) {
		b, err := term.ReadPassword(int(in.file.Fd()))
		fmt.Fprintln(a.Stdout)
		if err != nil {
			return "", fmt.Errorf("read secret: %w", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	s, err := in.line()
	if err == io.EOF {
		return "", nil
	}
	return strings.TrimSpace(s), err
}

func isMenuProvider(p string) bool {
	for _, m := range menuProviders() {
		if m.name == preset.Canonical(p) {
			return true
		}
	}
	return false
}

func anySet(l *config.Loaded, names []string) bool {
	for _, n := range names {
		if l.Getenv(n) != "" {
			return true
		}
	}
	return false
}
