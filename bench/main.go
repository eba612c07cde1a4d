// Command bench measures edgeindex against outside baselines in one run,
// on one throwaway PostgreSQL (or TEST_DATABASE_URL's): River's no-op jobs,
// raw SQL SKIP LOCKED cycles and raw COPY, and a one-process pipeline. It
// is a module of its own so that River never becomes a dependency of the
// SDK. See README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/edgeindex/edgeindex/batch"
)

type options struct {
	n, workers, count   int
	quick, prefetch     bool
	only                string
	ingestBatches       int
	batchItems          int
	articles, rangeSize int64
	pipeWorkers         int
	waits               bool
	riverCooldown       time.Duration
	cpuprofile          string
	mutexprofile        string
	coordinators        int
	chunkTime           int
	innArticles         int
	innPoll             time.Duration
	innCompress         string
	innRangeSize        int64
	search              searchConfig
	deployed1M          bool
	ranges              int
	deployedResults     int

	load        bool
	duration    time.Duration
	loadWorkers int
	think       time.Duration
	loadItems   int
}

// result is one measurement.
type result struct {
	rate    float64
	elapsed time.Duration
	detail  string
}

var phases = []string{"river", "edgeindex", "deployed", "sqlite", "rawsql", "ingest", "pipeline", "scale", "chunkstore", "search", "inn"}

func main() {
	var o options
	fs := flag.NewFlagSet("bench", flag.ExitOnError)
	fs.IntVar(&o.n, "n", 20_000, "jobs (River), ranges (edgeindex) and rows (raw SQL) per cycle run")
	fs.IntVar(&o.workers, "workers", 32, "workers of the cycle runs")
	fs.IntVar(&o.ranges, "ranges", 16, "deployed: ranges each worker holds in the many-range line (deployed-many/postgres, deployed-3call-many/postgres), 2 to 256")
	fs.IntVar(&o.count, "count", 1, "runs of each measurement; figures and ratios are medians")
	fs.BoolVar(&o.quick, "quick", false, "a fast smoke run: small sizes (overrides -n, -ingest-batches, -articles, -duration)")
	fs.BoolVar(&o.prefetch, "prefetch", true, "also time the PostgreSQL cycles with the coordinator's prefetcher running, as serve runs it (edgeindex/postgres+prefetch; it fetches for streams, and these cycles stream nothing, so only its idle passes fetch)")
	fs.StringVar(&o.only, "only", "", "comma-separated phases to run: "+strings.Join(phases, ","))
	fs.IntVar(&o.ingestBatches, "ingest-batches", 10, "batches posted (and COPYs) in the ingest runs")
	fs.IntVar(&o.batchItems, "batch-items", 10_000, "items per ingest batch")
	fs.Int64Var(&o.articles, "articles", 200_000, "articles through the pipeline")
	innFlags(fs, &o)
	fs.Int64Var(&o.rangeSize, "range-size", 10_000, "articles per range in the pipeline")
	fs.IntVar(&o.pipeWorkers, "pipeline-workers", 4, "workers of the pipeline and goroutines of its baseline")
	fs.DurationVar(&o.riverCooldown, "river-fetch-cooldown", 2*time.Millisecond, "River's FetchCooldown (its poll interval is 10×): 2ms as River's own benchmark; River's default is 100ms")
	fs.BoolVar(&handOver, "then-lease", true, "cycle runs' final batches ask for the next lease in their answer (?then=lease), as edge.Worker does")
	fs.BoolVar(&finalBatches, "final", true, "cycle runs post a final batch that finishes the range (false: a batch, then a finish)")
	diagnosisFlags(fs, &o)
	fs.IntVar(&o.coordinators, "coordinators", 3, "scale: cycles and pipeline against 1 to this many coordinators")
	fs.IntVar(&o.chunkTime, "chunk-ops", 200, "chunkstore: operations of each case of spool's BenchmarkChunkStore")
	fs.IntVar(&o.search.Releases, "search-releases", 1_000_000, "search: releases stored on each backend")
	fs.IntVar(&o.search.Conc, "search-conc", 8, "search: goroutines sending requests (and raw queries)")
	fs.IntVar(&o.search.Requests, "search-requests", 4000, "search: requests (and raw queries) per search line")
	fs.IntVar(&o.search.Queries, "search-queries", 1000, "search: distinct two-word queries drawn from the stored names")
	fs.BoolVar(&o.deployed1M, "deployed-1m", false, "deployed: also time the cycles with a million ranges waiting (deployed-1M/postgres)")
	fs.IntVar(&o.deployedResults, "deployed-results", 10_000_000, "deployed-1M: results stored before its cycles (0: none)")
	loadFlags(fs, &o)
	fs.Parse(os.Args[1:])
	if fs.NArg() > 0 || !o.valid() {
		fmt.Fprintln(os.Stderr, "bench: sizes must be positive, and there are no arguments (see -h)")
		os.Exit(2)
	}
	if o.quick {
		o.n, o.ingestBatches, o.articles = 2000, 2, 40_000
		if !isSet(fs, "search-releases") {
			o.search.Releases = 50_000
		}
		if !isSet(fs, "duration") {
			o.duration = 10 * time.Second
		}
		if !isSet(fs, "inn-articles") {
			o.innArticles = 20_000
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second signal kills at once
	}()
	err := run(ctx, os.Stdout, o)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// loadFlags adds the load test's flags.
func loadFlags(fs *flag.FlagSet, o *options) {
	fs.BoolVar(&o.load, "load", false, "run the load test (deliverable 5) instead of the comparisons")
	fs.DurationVar(&o.duration, "duration", time.Minute, "how long the load test runs")
	fs.IntVar(&o.loadWorkers, "load-workers", 200, "concurrent workers of the load test")
	fs.DurationVar(&o.think, "think", 200*time.Millisecond, "load test: mean pause after each call of a worker (jittered ±50%); 0: none")
	fs.IntVar(&o.loadItems, "load-items", 10, "load test: items per batch")
}

// diagnosisFlags adds the flags that say where the time goes.
func diagnosisFlags(fs *flag.FlagSet, o *options) {
	fs.BoolVar(&o.waits, "waits", false, "sample pg_stat_activity during PostgreSQL runs and print what sessions wait on")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the whole run (coordinator, workers, baselines) to this file")
	fs.StringVar(&serveProfiles, "serve-profiles", "", "keep CPU profiles of serve's process in this directory: 3 s of each deployed line's cycles, 2 s of the INN index, the last 10 s of -load")
	fs.BoolVar(&statements, "statements", false, "run PostgreSQL with pg_stat_statements and print each PostgreSQL line's ten costliest statements")
	fs.StringVar(&o.mutexprofile, "mutexprofile", "", "write a profile of contended mutexes (sync.Mutex, not database locks) to this file")
}

// valid reports whether every size is positive.
func (o *options) valid() bool {
	return o.n >= 1 && o.workers >= 1 && o.ranges >= 2 && o.ranges <= 256 && o.count >= 1 && o.ingestBatches >= 1 && o.batchItems >= 1 &&
		o.articles >= 1 && o.rangeSize >= 1 && o.pipeWorkers >= 1 && o.loadWorkers >= 1 && o.loadItems >= 1 && o.coordinators >= 1 && o.chunkTime >= 1 &&
		o.search.Releases >= 1 && o.search.Conc >= 1 && o.search.Requests >= 1 && o.search.Queries >= 1 && o.duration > 0 &&
		o.riverCooldown >= time.Millisecond && o.deployedResults >= 0 && o.innArticles >= 1 && o.innRangeSize >= 1 && o.innPoll > 0 &&
		slices.Contains([]string{"none", "auto", "deflate", "gzip"}, o.innCompress)
}

func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// run starts PostgreSQL, runs what o asks and stops PostgreSQL, whatever
// happens.
func run(ctx context.Context, out io.Writer, o options) (err error) {
	want, err := wantPhases(o.only)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "edgeindex-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	defer removeCoordinatorBinary()
	pg, err := startPostgres(statements)
	if err != nil {
		return err
	}
	defer pg.Close()
	stopProfiles, err := startProfiles(o)
	defer stopProfiles()
	if err != nil {
		return err
	}
	desc, err := pg.describe(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "bench: %s; %s %s/%s, GOMAXPROCS %d, %d CPUs\n", desc, runtime.Version(), runtime.GOOS, runtime.GOARCH,
		runtime.GOMAXPROCS(0), runtime.NumCPU())
	s := &session{ctx: ctx, out: out, o: o, pg: pg, tmp: tmp}
	if o.load {
		return s.load()
	}
	fmt.Fprintf(out, "bench: cycles: %d workers, %d jobs/ranges/rows; ingest: %d batches of %d items; pipeline: %d articles, ranges of %d, %d workers; %d run(s) each\n",
		o.workers, o.n, o.ingestBatches, o.batchItems, o.articles, o.rangeSize, o.pipeWorkers, o.count)
	ms := s.measures(want)
	defer closeSearch()
	defer closeINN()
	rates, err := s.runAll(ms)
	if err != nil {
		return err
	}
	report(out, ms, rates, o.count)
	if errors.Is(ctx.Err(), context.Canceled) {
		return ctx.Err()
	}
	return nil
}

// load runs the load test (-load) on a new schema.
func (s *session) load() error {
	dir, err := s.newDir()
	if err != nil {
		return err
	}
	o := s.o
	_, err = s.onPG("load", func(url string) (result, error) {
		return result{}, runLoad(s.ctx, s.out, url, dir, loadConfig{Workers: o.loadWorkers, Duration: o.duration, Think: o.think, Items: o.loadItems})
	})
	return err
}

// runAll runs every measurement o.count times, printing each line, and
// returns the rates by name.
func (s *session) runAll(ms []measure) (map[string][]float64, error) {
	rates := map[string][]float64{}
	for run := 1; run <= s.o.count; run++ {
		for _, m := range ms {
			r, err := m.f()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", m.name, err)
			}
			rates[m.name] = append(rates[m.name], r.rate)
			tag := ""
			if s.o.count > 1 {
				tag = fmt.Sprintf(" [run %d]", run)
			}
			fmt.Fprintf(s.out, "%-34s %12.0f %-10s (%s in %s)%s\n", m.name, r.rate, m.unit, r.detail, r.elapsed.Round(time.Millisecond), tag)
		}
	}
	return rates, nil
}

// wantPhases returns the phases -only names, or every phase.
func wantPhases(only string) (map[string]bool, error) {
	want := map[string]bool{}
	if only == "" {
		for _, p := range phases {
			want[p] = true
		}
		return want, nil
	}
	for _, p := range strings.Split(only, ",") {
		if !slices.Contains(phases, p) {
			return nil, fmt.Errorf("-only: unknown phase %q (want some of %s)", p, strings.Join(phases, ","))
		}
		want[p] = true
	}
	return want, nil
}

// startProfiles starts the CPU and mutex profiles o asks for; the function
// it returns, even with an error, writes and closes what was started.
func startProfiles(o options) (stop func(), err error) {
	var stops []func()
	stop = func() {
		for _, f := range slices.Backward(stops) {
			f()
		}
	}
	if o.cpuprofile != "" {
		f, err := os.Create(o.cpuprofile)
		if err != nil {
			return stop, err
		}
		stops = append(stops, func() { f.Close() })
		if err := pprof.StartCPUProfile(f); err != nil {
			return stop, err
		}
		stops = append(stops, pprof.StopCPUProfile)
	}
	if o.mutexprofile != "" {
		f, err := os.Create(o.mutexprofile)
		if err != nil {
			return stop, err
		}
		stops = append(stops, func() { f.Close() })
		runtime.SetMutexProfileFraction(1)
		stops = append(stops, func() { pprof.Lookup("mutex").WriteTo(f, 0) })
	}
	return stop, nil
}

// session is what the measurements of one run share.
type session struct {
	ctx  context.Context
	out  io.Writer
	o    options
	pg   *postgres
	tmp  string
	dirs int
}

// newDir makes a new directory under the run's temporary one.
func (s *session) newDir() (string, error) {
	s.dirs++
	d := filepath.Join(s.tmp, fmt.Sprint(s.dirs))
	return d, os.MkdirAll(d, 0o755)
}

// onPG runs f on a new schema of the server, after a checkpoint, sampling
// what sessions wait on when -waits is set.
func (s *session) onPG(name string, f func(url string) (result, error)) (result, error) {
	url, drop, err := s.pg.schema(s.ctx, strings.NewReplacer("/", "_", "-", "_").Replace(name))
	if err != nil {
		return result{}, err
	}
	defer drop()
	s.pg.quiesce(s.ctx)
	var w *waitSampler
	if s.o.waits {
		w = startWaits(s.ctx, s.pg.base)
	}
	if statements {
		if err := resetStatements(s.ctx, s.pg.base); err != nil {
			return result{}, err
		}
	}
	r, err := f(url)
	if w != nil {
		w.stop(s.out, name)
	}
	if statements && err == nil {
		err = printStatements(s.ctx, s.out, s.pg.base, name)
	}
	return r, err
}

// onPGDir is onPG with a new directory too.
func (s *session) onPGDir(name string, f func(url, dir string) (result, error)) (result, error) {
	dir, err := s.newDir()
	if err != nil {
		return result{}, err
	}
	return s.onPG(name, func(url string) (result, error) { return f(url, dir) })
}

// measure is one line of the comparison.
type measure struct {
	name, unit string
	f          func() (result, error)
}

// measures lists the measurements of the phases in want, in order.
func (s *session) measures(want map[string]bool) []measure {
	var ms []measure
	add := func(phase, name, unit string, f func() (result, error)) {
		if want[phase] {
			ms = append(ms, measure{name, unit, f})
		}
	}
	s.cycleMeasures(add)
	s.deployedMeasures(add)
	note := s.ingestMeasures(add, want["ingest"])
	s.pipelineMeasures(add)
	if want["scale"] {
		ms = append(ms, s.scaleMeasures(s.o.coordinators)...)
	}
	if want["chunkstore"] {
		ms = append(ms, s.chunkStoreMeasures()...)
	}
	if want["search"] {
		ms = append(ms, s.searchMeasures(s.o.search)...)
	}
	s.innMeasures(add)
	if want["ingest"] {
		fmt.Fprint(s.out, note)
	}
	return ms
}

// addMeasure adds the measurement name of phase, when the phase is
// wanted.
type addMeasure func(phase, name, unit string, f func() (result, error))

// cycleMeasures are the cycle lines: River, edgeindex on PostgreSQL
// (and with the prefetcher), raw SQL, edgeindex on SQLite.
func (s *session) cycleMeasures(add addMeasure) {
	ctx, o := s.ctx, s.o
	add("river", "river", "jobs/s", func() (result, error) {
		return s.onPG("river", func(url string) (result, error) { return benchRiver(ctx, url, o.n, o.workers, o.riverCooldown) })
	})
	add("edgeindex", "edgeindex/postgres", "cycles/s", func() (result, error) {
		return s.onPGDir("edgeindex", func(url, dir string) (result, error) { return benchCycles(ctx, url, dir, o.n, o.workers, false) })
	})
	if o.prefetch {
		add("edgeindex", "edgeindex/postgres+prefetch", "cycles/s", func() (result, error) {
			return s.onPGDir("edgeindex", func(url, dir string) (result, error) { return benchCycles(ctx, url, dir, o.n, o.workers, true) })
		})
	}
	add("rawsql", "rawsql", "cycles/s", func() (result, error) {
		return s.onPG("rawsql", func(url string) (result, error) { return benchRawSQL(ctx, url, o.n, o.workers) })
	})
	add("sqlite", "edgeindex/sqlite", "cycles/s", func() (result, error) {
		dir, err := s.newDir()
		if err != nil {
			return result{}, err
		}
		return benchCycles(ctx, "sqlite://"+filepath.Join(dir, "edgeindex.db"), dir, o.n, o.workers, false)
	})
}

// ingestMeasures are the ingest lines, batches and COPY, over the same
// items, made when wanted; it returns the line that describes them.
func (s *session) ingestMeasures(add addMeasure, wanted bool) (note string) {
	ctx, o := s.ctx, s.o
	var items []batch.Item
	var minItem, maxItem, itemBytes int64
	if wanted {
		items, minItem, maxItem, itemBytes = ingestItems(o.batchItems)
		note = fmt.Sprintf("bench: ingest items: %d a batch, values of %d to %d B of JSON, %.0f B on average\n",
			len(items), minItem, maxItem, float64(itemBytes)/float64(len(items)))
	}
	add("ingest", "ingest/batch", "items/s", func() (result, error) {
		return s.onPGDir("ingest", func(url, dir string) (result, error) { return benchIngest(ctx, url, dir, o.ingestBatches, items) })
	})
	add("ingest", "ingest/copy", "items/s", func() (result, error) {
		return s.onPG("copy", func(url string) (result, error) { return benchCopy(ctx, url, o.ingestBatches, items) })
	})
	return note
}

// pipelineMeasures are the pipeline lines: edgeindex's, then the
// baseline, which must collate as many items.
func (s *session) pipelineMeasures(add addMeasure) {
	ctx, o := s.ctx, s.o
	var edgeRun, baseRun pipelineRun
	add("pipeline", "pipeline/edgeindex", "articles/s", func() (result, error) {
		return s.onPGDir("pipeline", func(url, dir string) (r result, err error) {
			r, edgeRun, err = benchPipeline(ctx, url, dir, o.articles, o.rangeSize, o.pipeWorkers)
			return r, err
		})
	})
	add("pipeline", "pipeline/baseline", "articles/s", func() (result, error) {
		return s.onPG("baseline", func(url string) (r result, err error) {
			r, baseRun, err = benchBaseline(ctx, url, o.articles, o.rangeSize, o.pipeWorkers)
			if err == nil && edgeRun.items != 0 && baseRun.items != edgeRun.items {
				err = fmt.Errorf("baseline: %d items, the edgeindex pipeline %d: they do not do the same work", baseRun.items, edgeRun.items)
			}
			return r, err
		})
	})
}

// report prints the medians of count runs, and the ratios.
func report(out io.Writer, ms []measure, rates map[string][]float64, count int) {
	med := map[string]float64{}
	if count > 1 {
		for _, m := range ms {
			med[m.name] = median(rates[m.name])
			fmt.Fprintf(out, "%-34s %12.0f %-10s median of %d: %s\n", m.name, med[m.name], m.unit, count, fmtRates(rates[m.name]))
		}
	} else {
		for k, v := range rates {
			med[k] = v[0]
		}
	}
	if a, okA := med["river/before"]; okA {
		if b, okB := med["river/after"]; okB {
			med["river around deployed"] = (a + b) / 2
		}
	}
	for _, r := range []struct{ label, a, b string }{
		{"edgeindex/river", "edgeindex/postgres", "river"},
		{"edgeindex+prefetch/river", "edgeindex/postgres+prefetch", "river"},
		{"edgeindex/rawsql", "edgeindex/postgres", "rawsql"},
		{"deployed/river", "deployed/postgres", "river around deployed"},
		{"deployed-many/river", "deployed-many/postgres", "river around deployed"},
		{"deployed-3call/river", "deployed-3call/postgres", "river around deployed"},
		{"deployed-3call-many/river", "deployed-3call-many/postgres", "river around deployed"},
		{"deployed-1M/deployed", "deployed-1M/postgres", "deployed/postgres"},
		{"ingest/copy", "ingest/batch", "ingest/copy"},
		{"pipeline/baseline", "pipeline/edgeindex", "pipeline/baseline"},
		{"scale/cycles 2c/1c", "scale/cycles/2c", "scale/cycles/1c"},
		{"scale/cycles 3c/1c", "scale/cycles/3c", "scale/cycles/1c"},
		{"scale/pipeline 2c/1c", "scale/pipeline/2c", "scale/pipeline/1c"},
		{"scale/pipeline 3c/1c", "scale/pipeline/3c", "scale/pipeline/1c"},
		{"search-pg handler/raw", "search-pg/handler", "search-pg/raw"},
		{"search-sqlite handler/raw", "search-sqlite/handler", "search-sqlite/raw"},
		{"search-pg common-pair handler/raw", "search-pg/common-handler", "search-pg/common-raw"},
		{"search-sqlite common-pair handler/raw", "search-sqlite/common-handler", "search-sqlite/common-raw"},
		{"inn/over", "inn/edgeindex", "inn/over"},
		{"chunkstore put latency minio/disk", "chunkstore/disk/put", "chunkstore/bucket-minio/put"},
		{"chunkstore open-read latency minio/disk", "chunkstore/disk/open-read", "chunkstore/bucket-minio/open-read"},
	} {
		a, okA := med[r.a]
		b, okB := med[r.b]
		if okA && okB && b > 0 {
			fmt.Fprintf(out, "RATIO %s = %.2f\n", r.label, a/b)
		}
	}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func fmtRates(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf("%.0f", x)
	}
	return strings.Join(parts, " ")
}
