package browser

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hermes-go/hermes/internal/backend"
)

// EnvLaunch starts Chromium inside a backend Environment (the session's
// box) and talks DevTools to it over --remote-debugging-pipe carried on
// the process's stdin and stdout: the shell wrapper moves stdin to fd 3
// (commands) and stdout to fd 4 (answers), and sends Chromium's own output
// to a log file, so no port is opened and nothing crosses the box's network
// namespace. The process lives in the box's cgroup (its memory and pid
// limits apply) and its traffic goes through the box's egress gate.
//
// open returns the session's environment; prepare returns the binary
// inside it and flags added to Flags (the proxy, the CA's SPKI).
func EnvLaunch(open func(ctx context.Context, sessionID string) (backend.Environment, error),
	prepare func(ctx context.Context, env backend.Environment) (execPath string, extra []string, err error),
) func(ctx context.Context, sessionID string) (context.Context, context.CancelFunc, error) {
	return func(ctx context.Context, sessionID string) (context.Context, context.CancelFunc, error) {
		env, err := open(ctx, sessionID)
		if err != nil {
			return nil, nil, err
		}
		execPath, extra, err := prepare(ctx, env)
		if err != nil {
			return nil, nil, err
		}
		a := &envAllocator{env: env, execPath: execPath, extra: extra, done: make(chan struct{})}
		actx, cancel := chromedp.NewAllocatorContext(ctx, a)
		return actx, func() { cancel(); a.Wait() }, nil
	}
}

// envAllocator is a chromedp.Allocator starting one browser in env.
type envAllocator struct {
	env      backend.Environment
	execPath string
	extra    []string
	proc     backend.Process
	done     chan struct{}
}

// shellQuote quotes s for /bin/sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Allocate starts the browser and returns it connected over the pipe.
// Cancelling ctx kills the process and removes its profile.
func (a *envAllocator) Allocate(ctx context.Context, opts ...chromedp.BrowserOption) (*chromedp.Browser, error) {
	var r [8]byte
	_, _ = rand.Read(r[:])
	profile := "/tmp/hermes-browser-" + hex.EncodeToString(r[:])
	args := []string{shellQuote(a.execPath), "--remote-debugging-pipe", "--user-data-dir=" + profile}
	for _, f := range append(append([]string(nil), Flags...), a.extra...) {
		args = append(args, shellQuote(f))
	}
	cmd := fmt.Sprintf("mkdir -p %s && %s 3<&0 4>&1 </dev/null >%s/chromium.log 2>&1; rc=$?; rm -rf %s; exit $rc",
		profile, strings.Join(args, " "), profile, profile)
	inR, inW := io.Pipe()   // commands → chromium fd 3
	outR, outW := io.Pipe() // chromium fd 4 → answers
	proc, err := a.env.Start(ctx, backend.ExecRequest{Command: cmd, Stdin: inR, Output: outW, DiscardOutput: true})
	if err != nil {
		return nil, fmt.Errorf("starting %s in the box: %w", a.execPath, err)
	}
	a.proc = proc
	go func() {
		res, _ := proc.Wait(context.Background())
		outW.CloseWithError(fmt.Errorf("chromium exited (code %d %s)", res.ExitCode, res.Signal))
		inR.Close()
		close(a.done)
	}()
	go func() {
		<-ctx.Done()
		inW.Close()
		_ = proc.Kill()
	}()
	return chromedp.NewBrowserTransport(ctx, chromedp.NewPipeConn(outR, inW), opts...)
}

// Wait blocks until the browser process has exited.
func (a *envAllocator) Wait() {
	if a.proc != nil {
		<-a.done
	}
}

// FindInEnv returns the path of a Chromium binary inside env, or an error
// telling how to get one.
func FindInEnv(ctx context.Context, env backend.Environment) (string, error) {
	res, err := env.Exec(ctx, backend.ExecRequest{Command: "command -v chromium chromium-browser google-chrome google-chrome-stable 2>/dev/null | head -n1", Timeout: 10 * time.Second})
	if err != nil {
		return "", err
	}
	if p := strings.TrimSpace(string(res.Output)); p != "" {
		return p, nil
	}
	return "", errors.New("no Chromium in the box; with terminal.box_image: host install it on the host (Debian: apt-get install chromium), or add it to the box image")
}

// SPKIFlag returns --ignore-certificate-errors-spki-list for the CA
// certificates in pemData (the box's egress CA, which signs the gate's
// intercepted leaves and is sent in their chain): Chromium on Linux trusts
// only its NSS database, not the system bundle the box appends the CA to.
func SPKIFlag(pemData []byte) (string, error) {
	var hashes []string
	for {
		var blk *pem.Block
		blk, pemData = pem.Decode(pemData)
		if blk == nil {
			break
		}
		cert, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return "", err
		}
		sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
		hashes = append(hashes, base64.StdEncoding.EncodeToString(sum[:]))
	}
	if len(hashes) == 0 {
		return "", errors.New("no certificate in the box CA file")
	}
	return "--ignore-certificate-errors-spki-list=" + strings.Join(hashes, ","), nil
}
