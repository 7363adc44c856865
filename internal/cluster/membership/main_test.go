package membership

import (
	"testing"

	"github.com/atoll-runtime/atoll/internal/testutil"
)

func TestMain(m *testing.M) { testutil.VerifyNoLeaks(m) }
