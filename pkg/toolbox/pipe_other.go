//go:build !linux

package toolbox

import "syscall"

// enlargePipe does nothing where pipe buffers cannot be resized.
func enlargePipe(syscall.Conn) {}
