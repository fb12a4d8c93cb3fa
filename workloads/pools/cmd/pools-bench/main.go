// Command pools-bench benchmarks connection-pool strategies (see ../../README.md).
package main

import (
	"os"

	"github.com/benchharness/pools/internal/bench"
)

func main() {
	os.Exit(bench.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
