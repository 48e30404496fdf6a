package egress

// TrustBundlePath is the box's full CA bundle. The box appends CACertPEM to
// it, so variables that REPLACE the default bundle (SSL_CERT_FILE,
// REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE, GIT_SSL_CAINFO, PIP_CERT) point here,
// while NODE_EXTRA_CA_CERTS (which ADDS to Node's built-in roots) points at
// CACertPath.
const TrustBundlePath = "/etc/ssl/certs/ca-certificates.crt"

// proxyURL is the proxy address the box's tools are given (ProxyPort).
const proxyURL = "http://127.0.0.1:3128"

// env builds the variables exported in the box.
//
// Every *_PROXY variable is http://127.0.0.1:3128 (an HTTP proxy; CONNECT
// works for any port). ALL_PROXY is deliberately http:// and not socks5h://:
// curl, git, pip (requests) and npm honour HTTP(S)_PROXY, and Python httpx
// (used by the openai/anthropic SDKs) refuses to start with a socks ALL_PROXY
// unless the optional socksio package is installed. The same port also
// speaks SOCKS5 for tools configured for it explicitly (e.g. ssh via
// `nc -X 5 -x 127.0.0.1:3128`). NO_PROXY keeps in-box servers on loopback
// reachable. One variable per secret holds its placeholder.
func (b *box) env() map[string]string {
	env := map[string]string{}
	for _, k := range []string{
		"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy",
		"npm_config_proxy", "npm_config_https_proxy", "YARN_HTTP_PROXY", "YARN_HTTPS_PROXY", "PIP_PROXY",
	} {
		env[k] = proxyURL
	}
	env["NO_PROXY"] = "localhost,127.0.0.1,::1"
	env["no_proxy"] = env["NO_PROXY"]
	for _, k := range []string{"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "PIP_CERT"} {
		env[k] = TrustBundlePath
	}
	env["NODE_EXTRA_CA_CERTS"] = CACertPath
	for _, s := range b.secrets {
		env[s.name] = s.placeholder
	}
	return env
}

// reservedEnv reports whether name is set by the gate itself, so a secret
// may not take it.
func reservedEnv(name string) bool {
	b := &box{}
	_, ok := b.env()[name]
	return ok
}
