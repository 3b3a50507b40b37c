// Package clitest runs the built chunks binary as a test's subprocess, the
// one harness of tests/cli, tests/fleet and tests/shards: [Start] starts it
// with arguments, environment and stdin (the binary that
// [pgtest.MainWithBinary] or [pgtest.WithBinary] built once for the test
// binary), [Proc] reads its stderr line by line as it comes so that a test
// can wait for a log line ([Proc.WaitLine]), signal it ([Proc.Signal]) and
// wait, bounded, for its end ([Proc.Wait], [Proc.WaitWithin]); [Result] is
// how it ended: stdout, stderr, exit code and the signal that killed it.
// [Lab] is a test's own migrated schema with the global flags that point
// chunks at it, as a given role or DSN.
package clitest
