package httpguard

import (
	"encoding/json"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
)

// Reasons a Policy refuses a request, as given to Policy.Refuse.
const (
	ForbiddenOrigin      = "forbidden_origin"       // 403: Origin is not the listener's own nor allowed
	ForbiddenHost        = "forbidden_host"         // 403: keyless, and Host is not a loopback name
	UnsupportedMediaType = "unsupported_media_type" // 415: a body of a type the route does not take
)

// JSON is the media type of JSON request bodies.
const JSON = "application/json"

// ConnectTypes are the content types of the Connect protocol's unary and
// streaming requests (https://connectrpc.com/docs/protocol), JSON and
// protobuf.
var ConnectTypes = []string{"application/json", "application/proto", "application/connect+json", "application/connect+proto"}

// Policy is what a listener asks of every request before its handler:
//
//   - an Origin header (browsers send it with every cross-origin request
//     and every POST) must be the listener's own (its host:port is the
//     request's Host) or one of AllowedOrigins: 403 otherwise;
//   - when the listener checks no key (Keyed false, allowed on loopback
//     only), Host must be a loopback name or address ("localhost",
//     127.0.0.0/8, ::1, with any port): 403 otherwise, which stops DNS
//     rebinding (a page of evil.example whose name now resolves to
//     127.0.0.1 sends Host: evil.example);
//   - a request with a body must give a Content-Type among BodyTypes(r)
//     (media type only; parameters such as charset are ignored): 415
//     otherwise.
type Policy struct {
	// Keyed says the listener requires a key (checked by its handler) on
	// every request but health checks; then any Host is answered.
	Keyed bool
	// AllowedOrigins are browser origins ("https://ui.example") allowed
	// besides the listener's own.
	AllowedOrigins []string
	// BodyTypes returns the media types a request body may have (nil:
	// application/json only; an empty non-nil list: any).
	BodyTypes func(r *http.Request) []string
	// KeyHint names how to give the listener a key, for the Host refusal
	// ("API_SERVER_KEY", "--api-key"); OriginHint how to allow an origin
	// ("API_SERVER_CORS_ORIGINS"), if there is a way.
	KeyHint, OriginHint string
	// Refuse writes a refusal in the listener's error shape; reason is
	// one of ForbiddenOrigin, ForbiddenHost, UnsupportedMediaType and msg a
	// sentence for the client (default: JSON {"error": {"message", "code"}}).
	Refuse func(w http.ResponseWriter, status int, reason, msg string)
}

// Handler returns h behind p. Wrap it in BodyDeadline: a refused
// request's body is not read.
func (p Policy) Handler(h http.Handler) http.Handler {
	refuse := p.Refuse
	if refuse == nil {
		refuse = defaultRefuse
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if status, reason, msg := p.Check(r); status != 0 {
			// The connection closes after the refusal: net/http would
			// otherwise read what is left of an unread body.
			w.Header().Set("Connection", "close")
			refuse(w, status, reason, msg)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Check returns the status, reason and message of p's refusal of r, or
// status 0 when r passes.
func (p Policy) Check(r *http.Request) (status int, reason, msg string) {
	if o := r.Header.Get("Origin"); o != "" && !OwnOrigin(o, r.Host) && !slices.Contains(p.AllowedOrigins, o) {
		msg := fmt.Sprintf("requests from web pages of origin %q are refused", o)
		if p.OriginHint != "" {
			msg += fmt.Sprintf("; add it to %s to allow it", p.OriginHint)
		}
		return http.StatusForbidden, ForbiddenOrigin, msg
	}
	if !p.Keyed && !LoopbackHost(r.Host) {
		key := "a key"
		if p.KeyHint != "" {
			key = p.KeyHint
		}
		return http.StatusForbidden, ForbiddenHost, fmt.Sprintf("Host %q is not a loopback name; without %s "+
			"the server answers only requests to localhost or a loopback address", r.Host, key)
	}
	if hasBody(r) {
		types := []string{JSON}
		if p.BodyTypes != nil {
			types = p.BodyTypes(r)
		}
		if len(types) > 0 && !mediaTypeIn(r.Header.Get("Content-Type"), types) {
			return http.StatusUnsupportedMediaType, UnsupportedMediaType, fmt.Sprintf("Content-Type %q is not accepted for %s %s: send the body as %s",
				r.Header.Get("Content-Type"), r.Method, r.URL.Path, strings.Join(types, " or "))
		}
	}
	return 0, "", ""
}

// hasBody reports whether r may carry a body (a Content-Length above 0,
// or a chunked or unknown length).
func hasBody(r *http.Request) bool {
	return r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody
}

func mediaTypeIn(contentType string, types []string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && slices.Contains(types, mt)
}

// LoopbackHost reports whether a Host header ("localhost:8642",
// "127.0.0.1", "[::1]:3000", "LOCALHOST.") names this machine's loopback:
// "localhost" or an address in 127.0.0.0/8 or ::1 (IPv4-mapped included).
// Other names under .localhost are not accepted.
func LoopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Zone() == "" && ip.Unmap().IsLoopback()
}

// OwnOrigin reports whether origin (an Origin header: scheme://host[:port])
// is the origin of a server reached as host (the request's Host header):
// an http or https origin whose host and port are host's.
func OwnOrigin(origin, host string) bool {
	if host == "" || strings.ContainsAny(host, "/?#@\\ \t") {
		return false
	}
	return strings.EqualFold(origin, "http://"+host) || strings.EqualFold(origin, "https://"+host)
}

func defaultRefuse(w http.ResponseWriter, status int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"message": msg, "code": reason}})
}
