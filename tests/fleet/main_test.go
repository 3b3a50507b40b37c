// Package fleet tests fleet mode end to end: the queue's SQL functions on a
// real PostgreSQL, the fleet package in process, and chunks worker as real
// processes that are started together, killed with SIGKILL, stopped with
// SIGTERM and woken by NOTIFY or by polling.
package fleet

import (
	"testing"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.MainWithBinary(m) }
