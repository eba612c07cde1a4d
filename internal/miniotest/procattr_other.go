//go:build !linux

package miniotest

import "syscall"

// sysProcAttr: only Linux kills a child with its parent; elsewhere Main
// stops the server.
func sysProcAttr() *syscall.SysProcAttr { return nil }
