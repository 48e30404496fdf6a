// Package envd holds the protocol buffers of E2B's envd (the in-sandbox
// daemon): process.Process and filesystem.Filesystem, served over the
// Connect protocol by hermes sandbox serve (internal/sandboxserver) and
// spoken by the e2b backend (internal/backend/e2b). The .proto files
// under proto/ are E2B's (Apache-2.0, see their headers); the Go code in process/,
// filesystem/ and their connect subpackages is generated from them and
// committed. Regenerate with the pinned tools:
//
//	GOBIN=/tmp/bin go install github.com/bufbuild/buf/cmd/buf@v1.75.0
//	GOBIN=/tmp/bin go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
//	GOBIN=/tmp/bin go install connectrpc.com/connect/cmd/protoc-gen-connect-go@v1.21.1
//	PATH=/tmp/bin:$PATH go generate ./internal/envd
package envd

//go:generate buf generate
