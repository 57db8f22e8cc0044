package toolbox

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// enlargePipe asks the kernel for a pipe buffer of maxFrame bytes (the default unprivileged
// limit, /proc/sys/fs/pipe-max-size, is 1 MiB). f may be any file: a failure leaves it as it
// was, which only costs speed.
func enlargePipe(f syscall.Conn) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) { _, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, maxFrame) })
}
