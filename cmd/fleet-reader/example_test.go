package main

import (
	"fmt"

	"github.com/edgeindex/edgeindex/fleet"
)

// The command line names the coordinators; each is named by its host:port,
// the scheme's port when the URL has none.
func ExampleMain_ParseFlags() {
	m := NewMain()
	m.Getenv = func(name string) string { return "the-admin-token" } // EDGEINDEX_ADMIN_TOKEN
	err := m.ParseFlags([]string{
		"--coordinator", "http://10.0.0.1:7070",
		"--coordinator", "https://coordinator.example/edgeindex/",
		"--keep", "30s",
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("listen on", m.Addr, "keep", m.Keep)
	hosts, err := fleet.HostNames(m.Coordinators)
	if err != nil {
		panic(err)
	}
	fmt.Println(hosts)
	// Output:
	// listen on 127.0.0.1:7071 keep 30s
	// [10.0.0.1:7070 coordinator.example:443]
}
