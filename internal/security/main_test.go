package security_test

import (
	"testing"

	"github.com/atoll-runtime/atoll/internal/testmain"
)

func TestMain(m *testing.M) { testmain.RunThen(m, builtDrivers.remove) }
