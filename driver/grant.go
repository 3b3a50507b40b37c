package driver

import "context"

// Access is what a role may do with chunks (docs/roles.md): see [Grant].
type Access string

const (
	// Viewer reads: inspect, report, status, the status page and metrics.
	Viewer Access = "viewer"
	// Operator does everything chunks does: a viewer's reading, and
	// register, check, run, drain, pause, resume, undo, campaigns and
	// workers.
	Operator Access = "operator"
	// Approver reads as a viewer does, runs the read-only checks of a
	// plan, and approves what another role proposed (docs/safety.md "Two
	// people"): [Approve], [ApproveCampaign]. It registers and runs nothing.
	Approver Access = "approver"
)

// Granted is what [Grant] granted or revoked: the functions and the tables,
// as the catalog names them.
type Granted struct {
	Role      string   `json:"role"`
	Access    Access   `json:"access"`
	Revoked   bool     `json:"revoked"`
	Functions []string `json:"functions"` // EXECUTE on each (all SECURITY DEFINER)
	Tables    []string `json:"tables"`    // SELECT on each (the tables of chunks; never orders)
}

// Grant gives role (exactly as pg_roles spells it) the privileges of access
// on the schema of db's search_path: one call of the SQL function
// grant_access, in its own statement. An operator can do everything a
// viewer can. Neither kind ever holds a privilege to write a table, or any
// on orders: the functions are SECURITY DEFINER. Run it as the schema's
// owner (or a superuser). A bad access, an unknown role or the schema's
// owner is an [ErrInvalid].
func Grant(ctx context.Context, db DB, role string, access Access) (Granted, error) {
	return grant(ctx, db, role, access, false)
}

// Revoke takes back what [Grant] gave: revoking [Operator] or [Approver]
// leaves a viewer, revoking [Viewer] takes everything, the schema's USAGE
// included.
// The same rules as Grant's apply.
func Revoke(ctx context.Context, db DB, role string, access Access) (Granted, error) {
	return grant(ctx, db, role, access, true)
}

func grant(ctx context.Context, db DB, role string, access Access, revoke bool) (Granted, error) {
	if access != Operator && access != Viewer && access != Approver {
		return Granted{}, Invalidf("access: must be %s, %s or %s, got %s", Operator, Viewer, Approver, Excerpt(string(access), true))
	}
	if role == "" {
		return Granted{}, Invalidf("role: must be given")
	}
	var g Granted
	_, err := QueryJSON(ctx, db, &g, "grant_access", role, string(access), revoke)
	return g, err
}
