//go:build linux || darwin || freebsd || netbsd || openbsd

package proxy

import (
	"net"
	"syscall"
)

// peerOpen reports whether an idle connection can still carry a request:
// nothing is waiting to be read on it, neither data nor the end of the
// stream (the upstream closed it while it was idle). One non-blocking
// peek, no read from the connection.
func peerOpen(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	open := false
	var buf [1]byte
	err = raw.Read(func(fd uintptr) bool {
		_, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		open = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
		return true
	})
	return err == nil && open
}
