// Command pools-bench-vitess is pools-bench with the real vitess smartconnpool registered
// as the strategy vitess-smartconnpool; pools-bench runs it (exec, same pid) for that
// strategy, so that the main pools module does not depend on vitess.
package main

import (
	"os"

	"github.com/benchharness/pools/internal/bench"
	"github.com/benchharness/pools/vitess/adapter"
)

func main() {
	adapter.Register()
	os.Exit(bench.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
