// Package benchutil lets benchmarks outside `go test` use the test helpers (test/mariadb,
// test/s3): temporary directories and cleanups, and failures as panics that Run recovers.
package benchutil

import (
	"fmt"
	"os"
)

// T is the part of testing.TB the helpers use.
type T struct{ cleanups []func() }

// Helper does nothing.
func (t *T) Helper() {}

// Fatal panics with its arguments.
func (t *T) Fatal(args ...any) { panic(fmt.Sprint(args...)) }

// Fatalf panics with the formatted message.
func (t *T) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

// Skipf panics: a benchmark cannot skip.
func (t *T) Skipf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

// Cleanup registers f to run when Run returns.
func (t *T) Cleanup(f func()) { t.cleanups = append(t.cleanups, f) }

// TempDir returns a new directory removed when Run returns.
func (t *T) TempDir() string {
	d, err := os.MkdirTemp("", "mysqlop-bench-")
	if err != nil {
		panic(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// Run calls f with a fresh T, runs its cleanups in reverse order, and returns f's failure.
func Run(f func(t *T) error) (err error) {
	t := &T{}
	defer func() {
		for i := len(t.cleanups) - 1; i >= 0; i-- {
			t.cleanups[i]()
		}
	}()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return f(t)
}
