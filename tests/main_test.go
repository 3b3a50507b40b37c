package tests

import (
	"testing"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
