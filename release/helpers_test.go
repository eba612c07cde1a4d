package release_test

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// validText reports whether s is valid UTF-8 without NUL bytes.
func validText(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }
