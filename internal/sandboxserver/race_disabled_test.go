//go:build !race

package sandboxserver_test

// raceEnabled: see race_enabled_test.go.
const raceEnabled = false
