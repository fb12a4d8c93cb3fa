// Package poll lets a test wait for what other goroutines bring about.
package poll

import (
	"testing"
	"time"
)

// Until polls cond every 2 ms for up to 5 s and fails t, naming what, if it never holds.
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for: %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
