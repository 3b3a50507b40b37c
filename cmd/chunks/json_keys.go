package main

import "github.com/chunks-dev/chunks/driver"

// The --json shapes of the results that list keys: each list holds the
// keys themselves, whatever their type (numbers for order ids and integer
// keys, strings for other keys, objects for composite keys), never an
// empty list beside a "keys" one. AllKeys never gives a nil list, so
// each prints as [] when empty.

// chunkJSON is chunks run --json.
type chunkJSON struct {
	Processed []driver.Key `json:"processed"`
	NextIndex int          `json:"next_index"`
	Done      bool         `json:"done"`
}

// drainJSON is chunks drain --json.
type drainJSON struct {
	Calls     int          `json:"calls"`
	Processed []driver.Key `json:"processed"`
	NextIndex int          `json:"next_index"`
	Done      bool         `json:"done"`
}

func chunkJSONOf(r driver.ChunkResult) chunkJSON {
	return chunkJSON{Processed: r.AllKeys(), NextIndex: r.NextIndex, Done: r.Done}
}

func drainJSONOf(r driver.DrainResult) drainJSON {
	return drainJSON{Calls: r.Calls, Processed: r.AllKeys(), NextIndex: r.NextIndex, Done: r.Done}
}
