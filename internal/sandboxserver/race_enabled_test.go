//go:build race

package sandboxserver_test

// raceEnabled: this test binary runs under the race detector (CI's second
// run), where the slowest end-to-end tests add process timing but no
// checked Go code: they run in the plain run.
const raceEnabled = true
