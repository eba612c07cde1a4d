package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"time"
)

// scaleMeasures are the lease cycles and the pipeline against 1 to max
// coordinators on one database and one chunk store: startFleet's, a
// directory standing for the bucket, so the figures are the coordinators'
// own; chunkstore gives the object store's latency apart. On two cores the
// coordinators share the CPUs with the database and the workers: the
// figures show what a coordinator costs, not how a fleet scales.
func (s *session) scaleMeasures(max int) []measure {
	ctx, o := s.ctx, s.o
	var ms []measure
	for k := 1; k <= max; k++ {
		ms = append(ms, measure{fmt.Sprintf("scale/cycles/%dc", k), "cycles/s", func() (result, error) {
			return s.onPGDir(fmt.Sprintf("scale_cycles_%d", k), func(url, dir string) (result, error) {
				return benchCyclesFleet(ctx, url, dir, o.n, o.workers, k)
			})
		}})
	}
	for k := 1; k <= max; k++ {
		ms = append(ms, measure{fmt.Sprintf("scale/pipeline/%dc", k), "articles/s", func() (result, error) {
			return s.onPGDir(fmt.Sprintf("scale_pipeline_%d", k), func(url, dir string) (result, error) {
				return benchPipelineFleet(ctx, url, dir, o.articles, o.rangeSize, o.pipeWorkers, k)
			})
		}})
	}
	return ms
}

// chunkStoreStores and chunkStoreOps are the cases of spool's
// BenchmarkChunkStore: the disk spool (the baseline), the Bucket spool over
// a directory, and over a real MinIO on loopback.
var (
	chunkStoreStores = []string{"disk", "bucket-dir", "bucket-minio"}
	chunkStoreOps    = []string{"put", "open-read"}
)

// chunkStoreMeasures report the latency of storing and of streaming one
// chunk from spool's BenchmarkChunkStore, which the first of them runs
// (go test -bench in the module's root, whose test helper starts MinIO
// from the machine's binary; without one, the MinIO lines say so). The
// rate is operations a second; the detail gives the time of one.
func (s *session) chunkStoreMeasures() []measure {
	var got map[string]time.Duration
	var runErr error
	var ms []measure
	for i, st := range chunkStoreStores {
		for j, op := range chunkStoreOps {
			first := i == 0 && j == 0
			key := st + "/" + op
			ms = append(ms, measure{"chunkstore/" + key, "ops/s", func() (result, error) {
				if first {
					got, runErr = runChunkStore(s.ctx, s.o.chunkTime)
				}
				if runErr != nil {
					return result{}, runErr
				}
				d, ok := got[key]
				if !ok {
					return result{detail: "not measured (no MinIO: see the README's Run the tests)"}, nil
				}
				return result{rate: float64(time.Second) / float64(d), elapsed: d * time.Duration(s.o.chunkTime),
					detail: fmt.Sprintf("%s an operation on one 2000-article chunk, %d operations", d.Round(100*time.Nanosecond), s.o.chunkTime)}, nil
			}})
		}
	}
	return ms
}

var chunkStoreLine = regexp.MustCompile(`^BenchmarkChunkStore/store=(\S+)/op=(\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op`)

// runChunkStore runs spool's BenchmarkChunkStore benchtime times a case and
// returns the time of one operation by "store/op".
func runChunkStore(ctx context.Context, benchtime int) (map[string]time.Duration, error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", "^BenchmarkChunkStore$",
		"-benchtime", fmt.Sprintf("%dx", benchtime), "./spool")
	cmd.Dir = filepath.Dir(wd) // the module's root: bench runs in its own directory
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("go test -bench BenchmarkChunkStore ./spool: %w\n%s", err, out)
	}
	got := map[string]time.Duration{}
	for _, line := range regexp.MustCompile(`\r?\n`).Split(string(out), -1) {
		if m := chunkStoreLine.FindStringSubmatch(line); m != nil {
			ns, _ := strconv.ParseFloat(m[3], 64)
			got[m[1]+"/"+m[2]] = time.Duration(ns)
		}
	}
	return got, nil
}
