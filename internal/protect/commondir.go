package protect

// A repository's .git/commondir makes git read its config and hooks from
// the directory the file names (gitrepository-layout(5)); a main
// repository has none. A command (in a box with the bind workspace, or
// under the local guard) that writes one makes the user's next `git
// status` on the host run whatever that directory's config says
// (core.fsmonitor). It is a protected path, but a name that does not exist
// cannot carry a read-only mount, so after each command the backend's
// Watch moves a .git/commondir that was not there when it started aside,
// to .git/commondir.refused-by-hermes, and says so in the command's
// output. A background command may still write one after the check; the
// next command's check moves it.
const (
	GitCommondir        = ".git/commondir"
	GitCommondirRefused = ".git/commondir.refused-by-hermes"
)
