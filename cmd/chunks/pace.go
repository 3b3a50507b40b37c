package main

import (
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/pace"
)

// paceFlagDefs are the pacing flags of worker and drain.
func paceFlagDefs() []cli.Flag {
	return []cli.Flag{
		&cli.DurationFlag{Name: "max-replica-lag", Usage: "hold new chunks while any standby streaming from the server is more than `D` behind in replay (0: off; needs pg_monitor)"},
		&cli.StringFlag{Name: "throttle-query", Usage: "hold new chunks while this `SQL` (one boolean, run read-only) returns true; an error holds too"},
		&cli.DurationFlag{Name: "check-interval", Value: pace.DefaultCheckInterval, Usage: "read the replica lag and the throttle query at most every `D`"},
	}
}

// paceFlags is the pacing that --max-replica-lag, --throttle-query and
// --check-interval ask for (worker and drain).
func paceFlags(c *cli.Context) pace.Config {
	return pace.Config{
		MaxReplicaLag: c.Duration("max-replica-lag"),
		ThrottleQuery: c.String("throttle-query"),
		CheckInterval: c.Duration("check-interval"),
	}
}
