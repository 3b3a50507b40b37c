package main

import (
	"flag"
	"fmt"
	"math"
	"strconv"

	"github.com/urfave/cli/v2"
)

// decimalFlags makes every integer flag of the commands read plain decimal
// digits, and walks every command's flags for what chunks does not use.
// urfave/cli hands an IntFlag to Go's flag package, which reads it in base
// 0: there --after 010 is 8, 0x10 is 16, 0b10 is 2 and 1_0 is 10. An
// integer flag also stays within PostgreSQL's integer (int4), where the
// values go, so that a number too large is the flag's usage error, not the
// server's. urfave/cli's Required is refused for the same reason: its error
// is not a usage error (requireFlags is).
func decimalFlags(cmds []*cli.Command) {
	for _, cmd := range cmds {
		for i, f := range cmd.Flags {
			if r, ok := f.(cli.RequiredFlag); ok && r.IsRequired() {
				panic(fmt.Sprintf("chunks %s --%s: Required is not a usage error; use requireFlags", cmd.Name, f.Names()[0]))
			}
			switch f := f.(type) {
			case *cli.IntFlag:
				if len(f.EnvVars) > 0 || f.FilePath != "" {
					panic(fmt.Sprintf("chunks %s --%s: an integer flag read from the environment is not checked", cmd.Name, f.Name))
				}
				cmd.Flags[i] = decimalIntFlag{f}
			case *cli.Int64Flag, *cli.UintFlag, *cli.Uint64Flag, *cli.IntSliceFlag, *cli.Int64SliceFlag, *cli.UintSliceFlag, *cli.Uint64SliceFlag:
				panic(fmt.Sprintf("chunks %s --%s: %T reads base 0; make it an IntFlag (decimal) or teach decimalFlags", cmd.Name, f.Names()[0], f))
			}
		}
		decimalFlags(cmd.Subcommands)
	}
}

// decimalIntFlag is an IntFlag whose value is read by decimalInt. It keeps
// the IntFlag's name, usage, default and help text; c.Int reads it as
// before.
type decimalIntFlag struct{ *cli.IntFlag }

// Apply defines the flag on set with a decimalInt value.
func (f decimalIntFlag) Apply(set *flag.FlagSet) error {
	p := f.Destination
	if p == nil {
		p = new(int)
	}
	*p = f.Value
	for _, name := range f.Names() {
		set.Var((*decimalInt)(p), name, f.Usage)
	}
	return nil
}

// decimalInt is an int flag's value, read as decimal digits with an
// optional minus sign, no leading zero and no _, within int4.
type decimalInt int

// Set reads s, or says what a value must look like.
func (d *decimalInt) Set(s string) error {
	digits := s
	if len(digits) > 1 && digits[0] == '-' {
		digits = digits[1:]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err != nil && !isDigits(digits), len(digits) > 1 && digits[0] == '0':
		return fmt.Errorf("want decimal digits (no leading 0, 0x, 0b, 0o or _)")
	case err != nil || n < math.MinInt32 || n > math.MaxInt32:
		return fmt.Errorf("want an integer from %d to %d", math.MinInt32, math.MaxInt32)
	}
	*d = decimalInt(n)
	return nil
}

// String is the value in decimal, as c.Int reads it back.
func (d *decimalInt) String() string { return strconv.Itoa(int(*d)) }

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}
