package edgeframe

import (
	"reflect"
	"runtime"
)

// CheckValuesFunc is the full name checkValues has in a goroutine's stack,
// for tests that look for a run of the early check still working.
var CheckValuesFunc = runtime.FuncForPC(reflect.ValueOf(checkValues).Pointer()).Name()
