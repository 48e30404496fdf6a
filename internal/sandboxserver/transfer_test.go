package sandboxserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"connectrpc.com/connect"

	"github.com/hermes-go/hermes/internal/envd/process"
	"github.com/hermes-go/hermes/internal/envd/process/processconnect"
)

// sandboxOf creates a sandbox on s and returns its id and envd token.
func (s *served) sandboxOf(t *testing.T) (id, token string) {
	t.Helper()
	var sb struct {
		SandboxID       string `json:"sandboxID"`
		EnvdAccessToken string `json:"envdAccessToken"`
	}
	data := s.do(t, "POST", "/v2/sandboxes", `{"templateID":"base","timeout":600}`, http.StatusCreated)
	if err := json.Unmarshal(data, &sb); err != nil || sb.SandboxID == "" {
		t.Fatalf("create answered %s", data)
	}
	return sb.SandboxID, sb.EnvdAccessToken
}

// envdRequest is a request to s's envd for sandbox id.
func (s *served) envdRequest(t *testing.T, method, path, id, token string, body io.Reader) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, s.envdURL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("E2b-Sandbox-Id", id)
	req.Header.Set("X-Access-Token", token)
	return req
}

// run runs a shell command in sandbox id through envd's process.Start.
func (s *served) run(t *testing.T, id, token, script string) {
	t.Helper()
	client := processconnect.NewProcessClient(http.DefaultClient, s.envdURL)
	req := connect.NewRequest(&process.StartRequest{Process: &process.ProcessConfig{Cmd: "/bin/sh", Args: []string{"-c", script}}})
	req.Header().Set("E2b-Sandbox-Id", id)
	req.Header().Set("X-Access-Token", token)
	stream, err := client.Start(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	for stream.Receive() {
		if end := stream.Msg().GetEvent().GetEnd(); end != nil {
			if end.GetExitCode() != 0 {
				t.Fatalf("%s: exit %d %s", script, end.GetExitCode(), end.GetError())
			}
			return
		}
	}
	t.Fatalf("%s: no end event: %v", script, stream.Err())
}

// statusKiB reads a field (VmRSS, VmHWM) of /proc/PID/status in KiB.
func statusKiB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// download reads path of sandbox id whole and returns its length.
func (s *served) download(t *testing.T, id, token, path string) (int64, error) {
	req := s.envdRequest(t, "GET", "/files?path="+path, id, token, nil)
	resp, err := (&http.Client{Transport: &http.Transport{DisableCompression: true}}).Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(resp.Body)
		return 0, fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, data)
	}
	return io.Copy(io.Discard, resp.Body)
}

// Four parallel downloads of a 500 MB sparse file took the server to
// 3.6 GB (each read whole into memory). They stream: the server's peak
// RSS while they run stays within 64 MiB of what it was before. Uploads
// (octet-stream and the SDK's multipart) stream into the box the same way.
func TestTransfersStreamWithBoundedMemory(t *testing.T) {
	needBoxes(t)
	s := serve(t, buildHermes(t))
	id, token := s.sandboxOf(t)
	const size = 500_000_000
	s.run(t, id, token, fmt.Sprintf("truncate -s %d /tmp/sparse", size))

	// Reset the peak to the RSS of now (clear_refs 5), then measure.
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", s.pid), []byte("5"), 0); err != nil {
		t.Skipf("cannot reset the server's peak RSS: %v", err)
	}
	idle := statusKiB(t, s.pid, "VmRSS")
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if n, err := s.download(t, id, token, "/tmp/sparse"); err != nil || n != size {
				t.Errorf("download: %d bytes, %v; want %d", n, err, size)
			}
		}()
	}
	// An upload runs beside them: 64 MB from a client that has no file.
	const upSize = 64 << 20
	req := s.envdRequest(t, "POST", "/files?path=/tmp/up/streamed", id, token, io.LimitReader(zeros{}, upSize))
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("octet-stream upload: %d %s", resp.StatusCode, data)
	}
	wg.Wait()
	peak := statusKiB(t, s.pid, "VmHWM")
	t.Logf("server RSS: %d KiB idle, %d KiB peak during 4 × %d MB downloads and a %d MiB upload", idle, peak, size/1_000_000, upSize>>20)
	if over := peak - idle; over > 64<<10 {
		t.Errorf("peak RSS %d KiB over idle, want at most 64 MiB", over)
	}
	if n, err := s.download(t, id, token, "/tmp/up/streamed"); err != nil || n != upSize {
		t.Fatalf("the uploaded file: %d bytes, %v; want %d", n, err, upSize)
	}

	// The SDK's multipart upload, its path in the part's filename.
	var mp bytes.Buffer
	mw := multipart.NewWriter(&mp)
	part, _ := mw.CreateFormFile("file", "/home/user/sdk.txt")
	part.Write([]byte("written by a multipart upload\n"))
	mw.Close()
	req = s.envdRequest(t, "POST", "/files", id, token, &mp)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	data, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(data), `"path":"/home/user/sdk.txt"`) {
		t.Fatalf("multipart upload: %d %s", resp.StatusCode, data)
	}
	req = s.envdRequest(t, "GET", "/files?path=sdk.txt", id, token, nil)
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	data, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(data) != "written by a multipart upload\n" {
		t.Fatalf("read back %q", data)
	}
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
