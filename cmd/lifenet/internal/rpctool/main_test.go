package rpctool

import (
	"testing"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }
