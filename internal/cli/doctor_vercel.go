package cli

import (
	"fmt"
	"time"

	"github.com/hermes-go/hermes/internal/backend/vercel"
	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/doctor"
)

// vercelChecks are the vercel_sandbox backend's checks, reported
// separately as seed 004 describes: the runtime, the Sandbox API client
// (the settings it will create sandboxes with) and auth, naming the active
// mode and, for an OIDC token, its expiry (the JWT's exp, not verified).
func (a *App) vercelChecks(l *config.Loaded, now time.Time) []doctor.Result {
	t := l.Config.Terminal
	runtime := cmpOrString(t.VercelRuntime, "node24")
	out := []doctor.Result{}
	if err := (vercel.Config{Runtime: runtime, CPU: 1, MemoryMB: vercel.MemoryPerCPU, Token: "x"}).Validate(); err != nil {
		out = append(out, doctor.Result{Status: doctor.Fail, Name: "vercel runtime", Detail: err.Error(),
			Fix: "hermes config set terminal.vercel_runtime node24"})
	} else {
		out = append(out, doctor.Result{Status: doctor.OK, Name: "vercel runtime", Detail: runtime})
	}
	api := cmpOrString(l.Getenv("VERCEL_API_URL"), "https://vercel.com/api")
	shape := vercel.Config{Runtime: runtime, CPU: t.ContainerCPU, MemoryMB: t.ContainerMemory, DiskMB: t.ContainerDisk, Token: "x"}
	if err := shape.Validate(); err != nil {
		out = append(out, doctor.Result{Status: doctor.Fail, Name: "vercel sandbox client", Detail: err.Error(),
			Fix: "hermes setup terminal --backend vercel_sandbox --cpu 2 --memory 4096"})
	} else {
		out = append(out, doctor.Result{Status: doctor.OK, Name: "vercel sandbox client",
			Detail: fmt.Sprintf("built-in Sandbox API client for %s; %g vCPU, %d MB", api, t.ContainerCPU, t.ContainerMemory)})
	}
	return append(out, vercelAuth(l.Getenv, now))
}

// vercelAuth reports the active auth mode: OIDC (VERCEL_OIDC_TOKEN, wins
// when set, as in the backend) with its expiry, else an access token
// (VERCEL_TOKEN with VERCEL_PROJECT_ID and VERCEL_TEAM_ID).
func vercelAuth(getenv func(string) string, now time.Time) doctor.Result {
	const name = "vercel auth"
	if tok := getenv("VERCEL_OIDC_TOKEN"); tok != "" {
		exp, err := vercel.OIDCExpiry(tok)
		switch {
		case err != nil:
			return doctor.Result{Status: doctor.Warn, Name: name, Detail: "OIDC token (VERCEL_OIDC_TOKEN); its expiry is unreadable: " + err.Error(),
				Fix: "run `vercel env pull` and export the fresh VERCEL_OIDC_TOKEN"}
		case !exp.After(now):
			return doctor.Result{Status: doctor.Fail, Name: name,
				Detail: fmt.Sprintf("OIDC token (VERCEL_OIDC_TOKEN) expired at %s", exp.Format(time.RFC3339)),
				Fix:    "run `vercel env pull` in the linked project and export the fresh token; for long-running hermes use VERCEL_TOKEN, VERCEL_PROJECT_ID and VERCEL_TEAM_ID"}
		}
		return doctor.Result{Status: doctor.OK, Name: name, Detail: fmt.Sprintf("OIDC token (VERCEL_OIDC_TOKEN, development only), expires %s (in %s)",
			exp.Format(time.RFC3339), exp.Sub(now).Round(time.Minute))}
	}
	if getenv("VERCEL_TOKEN") != "" {
		var missing []string
		for _, k := range []string{"VERCEL_PROJECT_ID", "VERCEL_TEAM_ID"} {
			if getenv(k) == "" {
				missing = append(missing, k)
			}
		}
		if len(missing) > 0 {
			return doctor.Result{Status: doctor.Fail, Name: name, Detail: fmt.Sprintf("access token (VERCEL_TOKEN) without %v", missing),
				Fix: "hermes config set VERCEL_PROJECT_ID prj_... and VERCEL_TEAM_ID team_... (hermes setup terminal reads them from .vercel/project.json)"}
		}
		return doctor.Result{Status: doctor.OK, Name: name, Detail: fmt.Sprintf("access token (VERCEL_TOKEN) for project %s, team %s",
			getenv("VERCEL_PROJECT_ID"), getenv("VERCEL_TEAM_ID"))}
	}
	return doctor.Result{Status: doctor.Fail, Name: name, Detail: "no credentials: neither VERCEL_OIDC_TOKEN nor VERCEL_TOKEN is set",
		Fix: "`vercel env pull` then export VERCEL_OIDC_TOKEN (development), or set VERCEL_TOKEN, VERCEL_PROJECT_ID and VERCEL_TEAM_ID"}
}
