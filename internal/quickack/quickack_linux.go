package quickack

import "syscall"

const supported = true

func setQuickAck(fd uintptr) {
	syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_QUICKACK, 1)
}
