package httpguard

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// A client that sends a request's headers and then too little of its body
// loses the connection; one whose body is in may wait for a long answer
// (a ReadTimeout would have cancelled it).
func TestBodyDeadline(t *testing.T) {
	const grace = 100 * time.Millisecond
	h := BodyDeadline(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			return
		}
		select { // an answer that takes several graces
		case <-time.After(5 * grace):
			io.WriteString(w, "answer")
		case <-r.Context().Done():
		}
	}), grace)
	ln, err := Bind("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(h)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	send := func(req string) (*http.Response, error) {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		io.WriteString(c, req)
		c.SetReadDeadline(time.Now().Add(time.Minute))
		return http.ReadResponse(bufio.NewReader(c), nil)
	}
	_, err = send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the connection is still open a minute after its body stopped")
	}
	resp, err := send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
	if err != nil {
		t.Fatalf("a long answer after the body was cut off: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if string(body) != "answer" {
		t.Fatalf("answer %q", body)
	}
}

// A reservation past what is free fails at once with ErrBusy (it used to
// wait, so stalled bodies holding the budget queued every other request);
// one larger than the budget takes the whole budget.
func TestBudget(t *testing.T) {
	b := NewBudget(10)
	release, err := b.Reserve(8)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Reserve(1 << 40); !errors.Is(err, ErrBusy) {
		t.Fatalf("reservation past the budget: err %v, want ErrBusy", err)
	}
	if r, err := b.Reserve(2); err != nil {
		t.Fatalf("the 2 free bytes: %v", err)
	} else {
		r()
	}
	if got := b.Held(); got != 8 {
		t.Fatalf("Held() = %d with 8 bytes reserved", got)
	}
	release()
	release() // a second call frees nothing more
	if got := b.Held(); got != 0 {
		t.Fatalf("Held() = %d after the release (released twice)", got)
	}
	whole, err := b.Reserve(1 << 40)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Reserve(1); !errors.Is(err, ErrBusy) {
		t.Fatalf("with the budget spent: err %v, want ErrBusy", err)
	}
	if got := b.Held(); got != 10 {
		t.Fatalf("Held() = %d with the whole budget of 10 reserved", got)
	}
	whole()
	if r, err := b.Reserve(10); err != nil {
		t.Fatal(err)
	} else {
		r()
	}
}
