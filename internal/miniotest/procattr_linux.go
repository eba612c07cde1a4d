package miniotest

import "syscall"

// sysProcAttr kills the server when the test binary dies, however it dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
