package conformance

import (
	"testing"

	"github.com/mlplatform/mlplatform/acctest"
)

func TestMain(m *testing.M) { acctest.Main(m) }
