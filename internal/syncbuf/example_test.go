package syncbuf_test

import (
	"fmt"
	"os/exec"

	"github.com/edgeindex/edgeindex/internal/syncbuf"
)

func ExampleBuffer() {
	var out syncbuf.Buffer
	cmd := exec.Command("echo", "hello")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(out.String())
	// Output: hello
}
