// Package faulttest holds the fault test with real processes (issue 9,
// proof 2): a coordinator process and edge worker processes (the
// examples/edgeworker binary) on a throwaway PostgreSQL cluster of its own,
// with workers killed, paused past their TTL and resumed, the coordinator
// killed and restarted, and PostgreSQL restarted, all while the fleet
// indexes; then every range, stored batch and results item is checked.
//
// The package has only tests. Run it with
//
//	go test -run TestFaultsRealProcesses -v ./internal/faulttest
//
// It is skipped under -short, and when no PostgreSQL binaries are found
// (it fails instead under EDGEINDEX_REQUIRE_POSTGRES=1).
package faulttest
