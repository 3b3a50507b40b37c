package driver

// The limits of docs/contract.md §3, in one table for all of the Go
// validation. The SQL face defines the same numbers once, in its function
// limits() (sql/functions/limits.sql), and every SQL check takes them from
// there; tests/limits_test.go reads limits() on a real server and requires
// it to equal [ContractLimits], and it states the contract's numbers and
// proves that both faces accept every edge and refuse one step past it, so
// neither face can drift from the other or from the contract unnoticed.
const (
	MaxNameLen   = 64 // job_id and tenant: 1 to 64 of [A-Za-z0-9_-]
	MaxTargets   = 64 // a target list has 1 to 64 entries
	MinChunkSize = 1
	MaxChunkSize = 10
	MaxMaxChunks = 64 // drain's max_chunks is 1 to 64

	// MaxChangeTargets and MaxChangeChunkSize are a declared change's
	// limits (docs/contract.md "A declared change's chunk"): a job of 1 to
	// 10,000 targets, chunks of 1 to 1,000 rows.
	MaxChangeTargets   = 10000
	MaxChangeChunkSize = 1000

	// MaxInputBytes bounds a plan or a target list as JSON text (1 MiB). 64
	// targets take a few kilobytes; the bound keeps a hostile input from
	// costing seconds and gigabytes before it is refused.
	MaxInputBytes = 1 << 20
)

// targetFields are the keys of a target, with their inclusive ranges.
var targetFields = []struct {
	name     string
	min, max int64
}{
	{"id", 1, 2147483647},
	{"revision", 0, 2147483646},
	{"qty", 1, 1000},
}

// planKeys are the keys of a plan, in the order they are checked.
var planKeys = []string{"job_id", "tenant", "targets", "chunk_size", "allow_partial"}

// Limits are the value rules of docs/contract.md §3 and the campaign bounds
// as one value, with the keys (JSON names) of the SQL function limits(),
// which holds the server's copy of each number.
type Limits struct {
	NameMaxLength         int              `json:"name_max_length"`          // job_id, tenant: 1 to this many of [A-Za-z0-9_-]
	TargetsMax            int              `json:"targets_max"`              // a target list: 1 to this many entries
	ChunkSizeMin          int              `json:"chunk_size_min"`           // chunk_size's lower bound
	ChunkSizeMax          int              `json:"chunk_size_max"`           // chunk_size's upper bound
	ChangeTargetsMax      int              `json:"change_targets_max"`       // a declared change's job: 1 to this many targets
	ChangeChunkSizeMax    int              `json:"change_chunk_size_max"`    // a declared change's chunk_size's upper bound
	MaxChunksMax          int              `json:"max_chunks_max"`           // drain's max_chunks: 1 to this
	InputMaxBytes         int              `json:"input_max_bytes"`          // a plan or items file, as JSON text
	CampaignTargetsMax    int              `json:"campaign_targets_max"`     // targets of one campaign
	CampaignNameMaxLength int              `json:"campaign_name_max_length"` // a campaign's name (its job ids add -NNNNNN)
	QueueWindowMin        int              `json:"queue_window_min"`         // a campaign's queue window's lower bound
	QueueWindowMax        int              `json:"queue_window_max"`         // a campaign's queue window's upper bound
	Target                map[string]Range `json:"target"`                   // each field of a target (id, revision, qty)
}

// Range is an inclusive range of integers.
type Range struct {
	Min int64 `json:"min"`
	Max int64 `json:"max"`
}

// ContractLimits returns the limits this driver enforces, built from the
// same constants and target ranges its checks use.
func ContractLimits() Limits {
	target := make(map[string]Range, len(targetFields))
	for _, f := range targetFields {
		target[f.name] = Range{Min: f.min, Max: f.max}
	}
	return Limits{
		NameMaxLength:         MaxNameLen,
		TargetsMax:            MaxTargets,
		ChunkSizeMin:          MinChunkSize,
		ChunkSizeMax:          MaxChunkSize,
		ChangeTargetsMax:      MaxChangeTargets,
		ChangeChunkSizeMax:    MaxChangeChunkSize,
		MaxChunksMax:          MaxMaxChunks,
		InputMaxBytes:         MaxInputBytes,
		CampaignTargetsMax:    MaxCampaignTargets,
		CampaignNameMaxLength: MaxCampaignNameLen,
		QueueWindowMin:        MinQueueWindow,
		QueueWindowMax:        MaxQueueWindow,
		Target:                target,
	}
}
