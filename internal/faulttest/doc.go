// Package faulttest holds the tests with real processes.
//
// TestFaultsRealProcesses (issue 9, proof 2): a coordinator process and
// edge worker processes (the cmd/edgeworker binary) on a throwaway
// PostgreSQL cluster of its own, with workers killed, paused past their
// TTL and resumed, the coordinator killed and restarted, and PostgreSQL
// restarted, all while the fleet indexes; then every range, stored batch
// and results item is checked, and the coordinator must stop cleanly on
// SIGTERM.
//
// TestScaleOut (issue 12): three coordinator processes sharing only the
// PostgreSQL cluster and a MinIO bucket (internal/miniotest; --storage),
// eight workers spread over them with failover lists, one coordinator
// SIGKILLed for good and another SIGKILLed and started again while they
// index; then the same checks of what was stored, that batches were stored
// in article order, and that every snapshot in the bucket is readable.
//
// The package has only tests. Run them with
//
//	go test -race -run 'TestFaultsRealProcesses|TestScaleOut' -v ./internal/faulttest
//
// They are skipped under -short, and when no PostgreSQL binaries (or, for
// TestScaleOut, no MinIO) are found; they fail instead under
// EDGEINDEX_REQUIRE_POSTGRES=1 (EDGEINDEX_REQUIRE_S3=1). Environment:
// EDGEINDEX_FAULTTEST_SEED repeats a run's random choices,
// EDGEINDEX_FAULTTEST_NOFAULTS=1 runs the workload without faults,
// EDGEINDEX_FAULTTEST_RACE=0 builds the coordinator without the race
// detector, and EDGEINDEX_FAULTTEST_KEEP=1 keeps the logs (they are kept on
// failure anyway).
package faulttest
