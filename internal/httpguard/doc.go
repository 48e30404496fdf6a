// Package httpguard is what every listener hermes opens shares (the
// gateway's API server, hermes sandbox serve's REST API and envd, the
// coming hermes proxy): binding an address (Bind: "0.0.0.0" means IPv4),
// bounding connections in total and per client address (Conns), bounding
// header and body read times and idle keep-alive connections (NewServer,
// BodyDeadline), bounding the request bytes a server holds at once
// (Budget), and refusing requests browsers can be made to send (Policy:
// other pages' Origin, DNS-rebound Host names, non-JSON bodies).
//
// A browser lets any web page send a "simple" cross-origin request (GET,
// or a POST of text/plain, form or multipart data) to a loopback server,
// and a page whose name was rebound to 127.0.0.1 may even read the
// answers (its Host header then names the page's domain). Policy refuses
// both, as the Fetch standard's CORS-safelisted request rules make
// necessary (https://fetch.spec.whatwg.org/#cors-safelisted-request-header).
package httpguard
