package sandboxserver

import "testing"

// LinkTo gives the end-to-end tests (package sandboxserver_test) a
// PostgreSQL URL through a link they can cut (a database outage).
func LinkTo(t *testing.T, dbURL string) (linked string, cut func()) {
	u, l := linkTo(t, dbURL)
	return u, l.cut
}
