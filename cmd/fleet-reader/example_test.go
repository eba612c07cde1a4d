package main

import "fmt"

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
	hosts, err := parseHosts(m.Coordinators)
	if err != nil {
		panic(err)
	}
	for _, h := range hosts {
		fmt.Println(h.name, "reads", h.base+"/v1/fleet")
	}
	// Output:
	// listen on 127.0.0.1:7071 keep 30s
	// 10.0.0.1:7070 reads http://10.0.0.1:7070/v1/fleet
	// coordinator.example:443 reads https://coordinator.example/edgeindex/v1/fleet
}
