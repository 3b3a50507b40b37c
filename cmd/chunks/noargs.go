package main

import "github.com/urfave/cli/v2"

// noArgs are the options of a command that takes no arguments and no flags
// of its own (the global flags are in deps): chunks status, router shards.
type noArgs struct{}

// parseNoArgs refuses any argument.
func parseNoArgs(c *cli.Context) (*noArgs, error) {
	_, err := positional(c)
	return &noArgs{}, err
}

// Validate has nothing to check.
func (*noArgs) Validate() error { return nil }
