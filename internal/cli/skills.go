package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/skills"
	"github.com/hermes-go/hermes/internal/skills/bundled"
	"github.com/hermes-go/hermes/internal/workspacefile"
)

// skillsLibrary returns the skills of this process: HERMES_HOME/skills,
// config skills.external_dirs and the working directory's .hermes/skills.
func (a *App) skillsLibrary(cfg *config.Loaded) *skills.Library {
	wd, _ := os.Getwd()
	return skills.NewLibrary(skills.Roots(a.Home(), cfg.Config.Skills.ExternalDirs, wd, a.Getenv("HOME"))...)
}

// newSkillsCmd is `hermes skills list|show|create|delete|check` (Hermes
// "cli-commands.md" skills; the hub subcommands are not implemented).
func (a *App) newSkillsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "skills",
		Short: "list, show, create, delete and check skills",
		Args:  cobra.NoArgs,
	}
	withLibrary := func(run func(lib *skills.Library, args []string) error) func(*cobra.Command, []string) error {
		return func(_ *cobra.Command, args []string) error {
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			return run(a.skillsLibrary(cfg), args)
		}
	}

	var category string
	list := &cobra.Command{
		Use:   "list",
		Short: "list installed skills",
		Args:  cobra.NoArgs,
		RunE: withLibrary(func(lib *skills.Library, _ []string) error {
			_ = a.syncBundled(false)
			return a.skillsList(lib, category)
		}),
	}
	list.Flags().StringVar(&category, "category", "", "only skills of this category")

	show := &cobra.Command{
		Use:   "show NAME",
		Short: "print a skill's SKILL.md and list its files",
		Args:  cobra.ExactArgs(1),
		RunE: withLibrary(func(lib *skills.Library, args []string) error {
			return a.skillsShow(lib, args[0])
		}),
	}

	var createCategory, description, from string
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "create a skill in HERMES_HOME/skills/<category>/<name>/",
		Args:  cobra.ExactArgs(1),
		RunE: withLibrary(func(lib *skills.Library, args []string) error {
			return a.skillsCreate(lib, args[0], createCategory, description, from)
		}),
	}
	create.Flags().StringVar(&createCategory, "category", "", "category folder (default general)")
	create.Flags().StringVar(&description, "description", "", "one line saying when to use the skill (creates a template SKILL.md)")
	create.Flags().StringVar(&from, "from", "", "read the whole SKILL.md from FILE (- for stdin)")

	var yes bool
	del := &cobra.Command{
		Use:   "delete NAME",
		Short: "delete a skill folder",
		Args:  cobra.ExactArgs(1),
		RunE: withLibrary(func(lib *skills.Library, args []string) error {
			return a.skillsDelete(lib, args[0], yes)
		}),
	}
	del.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")

	check := &cobra.Command{
		Use:   "check",
		Short: "report every malformed or skipped SKILL.md (exit 1 when there are problems)",
		Args:  cobra.NoArgs,
		RunE: withLibrary(func(lib *skills.Library, _ []string) error {
			return a.skillsCheck(lib)
		}),
	}
	sync := &cobra.Command{
		Use:   "sync",
		Short: "install or refresh the skills bundled with hermes (copies you edited are kept)",
		Args:  cobra.NoArgs,
		RunE:  func(*cobra.Command, []string) error { return a.syncBundled(true) },
	}
	cmd.AddCommand(list, show, create, del, check, sync)
	return cmd
}

func (a *App) skillsList(lib *skills.Library, category string) error {
	list, diags := lib.List(category)
	if len(list) == 0 {
		if category != "" {
			fmt.Fprintf(a.Stdout, "No skills in category %q.\n", category)
		} else {
			fmt.Fprintln(a.Stdout, "No skills installed. Create one with `hermes skills create NAME --description TEXT`.")
		}
	} else {
		tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tCATEGORY\tSOURCE\tDESCRIPTION")
		for _, s := range list {
			c := s.Category
			if c == "" {
				c = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Name, c, s.Root.Kind, strings.Join(strings.Fields(s.Description), " "))
		}
		tw.Flush()
	}
	if len(diags) > 0 {
		fmt.Fprintf(a.Stderr, "hermes: %d skill file problem(s); run `hermes skills check` for details\n", len(diags))
	}
	return nil
}

func (a *App) skillsShow(lib *skills.Library, name string) error {
	s, err := lib.Get(name)
	if err != nil {
		return err
	}
	fmt.Fprint(a.Stdout, s.Raw)
	if !strings.HasSuffix(s.Raw, "\n") {
		fmt.Fprintln(a.Stdout)
	}
	files, err := s.Files()
	if err != nil {
		return fmt.Errorf("listing %s: %v", s.Dir, err)
	}
	fmt.Fprintf(a.Stderr, "\n# %s (%s)\n", s.Path, s.Root.Kind)
	for _, f := range files {
		fmt.Fprintf(a.Stderr, "#   %s\n", f)
	}
	return nil
}

// skillTemplate is the SKILL.md written by `hermes skills create` with
// --description, following the Hermes body convention.
func skillTemplate(name, description string) string {
	title := strings.ReplaceAll(name, "-", " ")
	return fmt.Sprintf(`---
name: %s
description: %s
version: 1.0.0
---
# %s

## When to Use
- %s

## Procedure
1. 

## Pitfalls
- 

## Verification
- 
`, name, yamlScalar(description), title, description)
}

// yamlScalar quotes s when YAML would not read it back as the same plain
// string (a ": " or " #" inside, or a leading indicator character).
func yamlScalar(s string) string {
	if s == "" || strings.ContainsAny(s[:1], "-?:,[]{}#&*!|>'\"%@`") || strings.Contains(s, ": ") || strings.Contains(s, " #") || strings.HasSuffix(s, ":") {
		return fmt.Sprintf("%q", s)
	}
	return s
}

func (a *App) skillsCreate(lib *skills.Library, name, category, description, from string) error {
	var content string
	switch {
	case from != "" && description != "":
		return fmt.Errorf("give either --from FILE (a whole SKILL.md) or --description TEXT (a template), not both")
	case from == "-":
		b, err := io.ReadAll(io.LimitReader(a.Stdin, skills.MaxSkillBytes+1))
		if err != nil {
			return fmt.Errorf("reading SKILL.md from stdin: %v", err)
		}
		content = string(b)
	case from != "":
		// The user names the file, but it may sit in a workspace a command
		// wrote: bounded, and a FIFO or device is refused without a hang.
		b, err := workspacefile.ReadHostFile(from, skills.MaxSkillBytes)
		if err != nil {
			return fmt.Errorf("--from: %v", err)
		}
		content = string(b)
	case strings.TrimSpace(description) != "":
		content = skillTemplate(name, strings.Join(strings.Fields(description), " "))
	default:
		return fmt.Errorf("give --description TEXT (one line saying when to use the skill) or --from FILE")
	}
	if s, err := lib.Get(name); err == nil {
		// The library's refusal speaks to the agent (patch or edit actions).
		return fmt.Errorf("skill %q already exists at %s; edit that file, or run `hermes skills delete %s` first to create it anew", name, s.Path, name)
	}
	s, err := lib.Create(name, category, content)
	if err != nil {
		return fmt.Errorf("creating skill %q: %v", name, err)
	}
	fmt.Fprintf(a.Stdout, "Created skill %s at %s\n", s.Name, s.Path)
	return nil
}

func (a *App) skillsDelete(lib *skills.Library, name string, yes bool) error {
	s, err := lib.Get(name)
	if err != nil {
		return err
	}
	if !yes {
		if !a.IsTerminal {
			return fmt.Errorf("refusing to delete %s without confirmation: add --yes", s.Dir)
		}
		fmt.Fprintf(a.Stdout, "Delete skill %s and everything in %s? [y/N] ", s.Name, s.Dir)
		answer, err := newLineReader(a.Stdin).line()
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if reply := strings.ToLower(strings.TrimSpace(answer)); reply != "y" && reply != "yes" {
			fmt.Fprintln(a.Stdout, "Not deleted.")
			return nil
		}
	}
	if _, err := lib.Delete(name); err != nil {
		return err
	}
	fmt.Fprintf(a.Stdout, "Deleted skill %s (%s)\n", s.Name, s.Dir)
	return nil
}

func (a *App) skillsCheck(lib *skills.Library) error {
	list, diags := lib.Scan()
	if len(diags) == 0 {
		fmt.Fprintf(a.Stdout, "%d skill(s) checked, no problems.\n", len(list))
		return nil
	}
	files := map[string]bool{}
	for _, d := range diags {
		files[d.Path] = true
		fmt.Fprintln(a.Stdout, d.String())
	}
	fmt.Fprintf(a.Stdout, "%d problem(s) in %d file(s); %d skill(s) usable.\n", len(diags), len(files), len(list))
	return &ExitError{Code: 1, Silent: true}
}

// syncBundled seeds or refreshes the bundled skills in HERMES_HOME/skills
// (package bundled). verbose reports every outcome (`hermes skills sync`);
// otherwise only changes and kept edits are mentioned, on stderr.
func (a *App) syncBundled(verbose bool) error {
	rep, err := bundled.Sync(a.Home())
	if err != nil {
		err = fmt.Errorf("bundled skills: %w", err)
		if !verbose {
			fmt.Fprintln(a.Stderr, "warning:", err)
			return nil
		}
		return err
	}
	w := a.Stderr
	if verbose {
		w = a.Stdout
	}
	switch {
	case rep.OptedOut:
		if verbose {
			fmt.Fprintf(w, "Bundled skills are off (%s exists in %s/skills).\n", bundled.OptOut, a.Home())
		}
		return nil
	case len(rep.Installed) > 0:
		fmt.Fprintf(w, "Installed bundled skills: %s\n", strings.Join(rep.Installed, ", "))
	}
	if len(rep.Updated) > 0 {
		fmt.Fprintf(w, "Updated bundled skills: %s\n", strings.Join(rep.Updated, ", "))
	}
	if len(rep.Kept) > 0 {
		fmt.Fprintf(w, "Kept your edited copies of: %s\n", strings.Join(rep.Kept, ", "))
	}
	if verbose && !rep.Changed() && len(rep.Kept) == 0 {
		fmt.Fprintln(w, "Bundled skills are up to date.")
	}
	return nil
}
