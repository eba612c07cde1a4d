package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
)

// LinearizeConfig sizes RunLinearizable. Zero fields take the defaults.
type LinearizeConfig struct {
	// Clients is how many clients call the store at once. 0: 16.
	Clients int
	// Ops is how many store calls each client makes. 0: the environment's
	// EDGEINDEX_LINEARIZE_OPS, else 200.
	Ops int
	// Histories is how many histories are recorded and checked, each on a
	// new backend. 0: EDGEINDEX_LINEARIZE_HISTORIES, else 1.
	Histories int
	// Seed seeds the clients' choices. 0: EDGEINDEX_LINEARIZE_SEED, else
	// one from the time. It is logged, and named on failure.
	Seed int64
	// SkipLocked says the backend's lane grant passes over a lane whose row
	// another transaction holds (PostgreSQL's SKIP LOCKED): its "no work"
	// is then not checked.
	SkipLocked bool
	// MaxAttempts is the store's maximum of corrupt chunks. 0: 5.
	MaxAttempts int
	// CheckTimeout bounds the linearizability check. 0: 2 minutes. A check
	// that does not finish fails the test.
	CheckTimeout time.Duration
}

func (c LinearizeConfig) withDefaults() LinearizeConfig {
	envInt := func(name string) int64 {
		n, _ := strconv.ParseInt(os.Getenv(name), 10, 64)
		return n
	}
	if c.Clients == 0 {
		c.Clients = 16
	}
	if c.Ops == 0 {
		c.Ops = int(envInt("EDGEINDEX_LINEARIZE_OPS"))
	}
	if c.Ops <= 0 {
		c.Ops = 200
	}
	if c.Histories == 0 {
		c.Histories = int(envInt("EDGEINDEX_LINEARIZE_HISTORIES"))
	}
	if c.Histories <= 0 {
		c.Histories = 1
	}
	if c.Seed == 0 {
		c.Seed = envInt("EDGEINDEX_LINEARIZE_SEED")
	}
	if c.Seed == 0 {
		c.Seed = time.Now().UnixNano() % 1_000_000_000
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 5
	}
	if c.CheckTimeout == 0 {
		c.CheckTimeout = 2 * time.Minute
	}
	return c
}

// The world each history runs in: one unordered group and one ordered
// group whose ranges are all in the history lane; small ranges, small
// chunks, short leases.
const (
	linRangeSize  = 30
	linChunkSize  = 5
	linMaxBatch   = 10 // a batch covers 1 to 10 articles
	linTTL        = 10 * time.Second
	linAbandonPct = 2 // calls whose context is cancelled mid-call
)

// RunLinearizable records histories of concurrent range and lane calls
// (Grant, Heartbeat, Put, Finish, Release, Corrupt, Retry, GrantLane, Next,
// HeartbeatLane, ReleaseLane) from many clients, with random pauses, calls
// abandoned mid-way (their outcome unknown) and the injected clock moved so
// that leases expire, and checks with porcupine that each history is
// linearizable against the wire contract's sequential model, per range and
// per lane. On failure it writes porcupine's visualization to a file (under
// $TEST_ARTIFACTS, else the system's temporary directory) and names it.
//
// Run it locally for longer with EDGEINDEX_LINEARIZE_OPS (calls per client)
// and EDGEINDEX_LINEARIZE_HISTORIES; replay a schedule's choices with
// EDGEINDEX_LINEARIZE_SEED.
func RunLinearizable(t *testing.T, open Open, cfg LinearizeConfig) {
	t.Helper()
	cfg = cfg.withDefaults()
	for i := range cfg.Histories {
		seed := cfg.Seed + int64(i)
		ok := t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			runLinearizable(t, newEnv(t, open), cfg, seed)
		})
		if !ok {
			return
		}
	}
}

type linRunner struct {
	e     *env
	cfg   LinearizeConfig
	seed  int64
	model *linModel
	base  time.Time // the clock's start
	start time.Time // the history's real-time origin

	plain, ordered grouplease.Group

	// Calls hold clockMu for reading; moving the clock holds it for
	// writing, so every call sees one known instant.
	clockMu sync.RWMutex

	mu         sync.Mutex
	ops        []porcupine.Operation
	streams    int
	counts     map[string]int
	unexpected []string
}

func runLinearizable(t *testing.T, e *env, cfg LinearizeConfig, seed int64) {
	t.Logf("seed %d (EDGEINDEX_LINEARIZE_SEED=%d replays the clients' choices), %d clients × %d calls", seed, seed, cfg.Clients, cfg.Ops)
	r := &linRunner{e: e, cfg: cfg, seed: seed, base: e.clock.Now(), counts: map[string]int{}}
	r.setup(t)

	r.start = time.Now()
	var wg sync.WaitGroup
	for i := range cfg.Clients {
		// Two clients share each node name, as a worker's lease loops do:
		// between them only the token fences.
		c := &linClient{id: i, r: r, rng: rand.New(rand.NewSource(seed*1000 + int64(i))), node: fmt.Sprintf("n%02d", i/4*2+i%2),
			stream: r.newStream(), lane: i%2 == 1}
		wg.Go(func() { c.run() })
	}
	wg.Wait()
	ran := time.Since(r.start)

	history := r.history()
	t.Logf("recorded %d calls in %s: %s", len(history), ran.Round(time.Millisecond), r.summary())
	for _, u := range r.unexpected {
		t.Logf("unexpected error (modelled as maybe-applied): %s", u)
	}
	r.check(t, history)
	r.exercised(t)
}

// setup adds the world: an unordered group and an ordered group with
// ranges in both lanes, enough that the clients do not run out of work.
func (r *linRunner) setup(t *testing.T) {
	// Each lane has n ranges, the plain group 4n (its workers move faster
	// than a lane's one holder at a time): neither runs out of work.
	n := int64(max(4, r.cfg.Clients*r.cfg.Ops/100))
	var err error
	r.plain, err = r.e.AddGroup(r.e.ctx, grouplease.Group{Name: "lin.plain", RangeSize: linRangeSize, ChunkSize: linChunkSize})
	require.NoError(t, err)
	r.ordered, err = r.e.AddGroup(r.e.ctx, grouplease.Group{Name: "lin.ordered", Ordered: true, RangeSize: linRangeSize, ChunkSize: linChunkSize})
	require.NoError(t, err)
	r.model = &linModel{init: map[string]any{}, objs: map[int64]string{}, skipLocked: r.cfg.SkipLocked, maxAttempts: r.cfg.MaxAttempts}

	plain, err := r.e.AddRanges(r.e.ctx, grouplease.NewRanges{Group: r.plain.Name, From: 1, To: 4 * n * linRangeSize})
	require.NoError(t, err)
	for _, rg := range plain {
		obj := fmt.Sprintf("r%d", rg.ID)
		r.model.init[obj] = initRange(rg, false)
		r.model.objs[rg.ID] = obj
	}
	for i, lane := range []lease.Lane{lease.LaneHistory, lease.LaneTail} {
		from := 1 + int64(i)*n*linRangeSize
		rs, err := r.e.AddRanges(r.e.ctx, grouplease.NewRanges{Group: r.ordered.Name, From: from, To: from + n*linRangeSize - 1, Lane: lane})
		require.NoError(t, err)
		sort.Slice(rs, func(i, j int) bool { return rs[i].Start < rs[j].Start })
		var l laneState
		for _, rg := range rs {
			l.Ranges = append(l.Ranges, initRange(rg, true))
			r.model.objs[rg.ID] = laneObj(lane)
		}
		r.model.init[laneObj(lane)] = l
	}
}

func initRange(rg lease.Range, ordered bool) rangeState {
	return rangeState{ID: rg.ID, Start: rg.Start, End: rg.End, Chunk: linChunkSize, Ordered: ordered,
		State: lease.StatePending, Next: rg.Next}
}

func (r *linRunner) newStream() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.streams++
	return r.streams - 1
}

// micros is a clock reading in microseconds since the clock's start.
func (r *linRunner) micros(t time.Time) int64 { return t.Sub(r.base).Microseconds() }

// history returns the recorded calls. An abandoned call's return is put
// after every other event, as etcd's robustness tests do: it may take
// effect at any point after it began.
func (r *linRunner) history() []porcupine.Operation {
	var last int64
	for _, op := range r.ops {
		last = max(last, op.Call, op.Return)
	}
	out := make([]porcupine.Operation, len(r.ops))
	for i, op := range r.ops {
		if op.Output.(linOutput).Unknown {
			op.Return = last + int64(time.Second)
		}
		out[i] = op
	}
	return out
}

func (r *linRunner) summary() string {
	keys := make([]string, 0, len(r.counts))
	for k := range r.counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", k, r.counts[k])
	}
	return b.String()
}

// exercised fails a run whose workload did not reach the paths the check
// is about: a store answering "no work" to everything is linearizable too.
// Runs too short to be sure of it (under 1600 calls) are not judged.
func (r *linRunner) exercised(t *testing.T) {
	t.Helper()
	if r.cfg.Clients*r.cfg.Ops < 1600 {
		return
	}
	for _, k := range []string{"grant ok", "grantLane ok", "next ok", "put ok", "finish ok", "heartbeat ok",
		"put lease_lost", "abandoned"} {
		if r.counts[k] == 0 {
			t.Errorf("the workload never produced %q: %s", k, r.summary())
		}
	}
}

// check runs porcupine on the history; on failure it writes the
// visualization and says which calls could not be linearized.
func (r *linRunner) check(t *testing.T, history []porcupine.Operation) {
	t.Helper()
	model := r.model.porcupine()
	parts := r.model.partition(history)
	largest := 0
	for _, p := range parts {
		largest = max(largest, len(p))
	}
	began := time.Now()
	res := porcupine.CheckOperationsTimeout(model, history, r.cfg.CheckTimeout)
	t.Logf("porcupine: %s, %d partitions (largest %d calls) checked in %s", res, len(parts), largest, time.Since(began).Round(time.Millisecond))
	switch res {
	case porcupine.Ok:
		return
	case porcupine.Unknown:
		t.Fatalf("the linearizability check did not finish within %s; run fewer calls (EDGEINDEX_LINEARIZE_OPS)", r.cfg.CheckTimeout)
	}
	// Porcupine stopped at the first partition it found illegal. Find the
	// smallest illegal ones (a lane's takes longer to refute), and
	// visualize those: the verbose check searches each to the end.
	sort.SliceStable(parts, func(i, j int) bool { return len(parts[i]) < len(parts[j]) })
	single := model
	single.Partition = nil
	var bad []porcupine.Operation
	found := 0
	deadline := time.Now().Add(r.cfg.CheckTimeout / 4)
	for _, p := range parts {
		left := time.Until(deadline)
		if left <= 0 || found == 3 {
			break
		}
		if porcupine.CheckOperationsTimeout(single, p, left) == porcupine.Illegal {
			bad = append(bad, p...)
			found++
		}
	}
	_, info := porcupine.CheckOperationsVerbose(model, bad, r.cfg.CheckTimeout/4)
	path := r.visualize(t, model, info)
	t.Fatalf("the history is not linearizable (seed %d):\n%s\nvisualization: %s", r.seed, explain(r.model, r.model.partition(bad), info), path)
}

func (r *linRunner) visualize(t *testing.T, model porcupine.Model, info porcupine.LinearizationInfo) string {
	dir := os.Getenv("TEST_ARTIFACTS")
	if dir == "" {
		dir = os.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return "(not written: " + err.Error() + ")"
	}
	name := strings.NewReplacer("/", "-", "=", "", " ", "_").Replace(t.Name())
	f, err := os.CreateTemp(dir, "linearize-"+name+"-*.html")
	if err != nil {
		return "(not written: " + err.Error() + ")"
	}
	f.Close()
	if err := porcupine.VisualizePath(model, info, f.Name()); err != nil {
		return "(not written: " + err.Error() + ")"
	}
	if abs, err := filepath.Abs(f.Name()); err == nil {
		return abs
	}
	return f.Name()
}

// explain names each partition that has no linearization: the state after
// its longest linearizable prefix and the earliest calls that cannot follow.
func explain(m *linModel, parts [][]porcupine.Operation, info porcupine.LinearizationInfo) string {
	var b strings.Builder
	for p, partials := range info.PartialLinearizationsOperations() {
		var longest []porcupine.Operation
		for _, l := range partials {
			if len(l) > len(longest) {
				longest = l
			}
		}
		if len(longest) == len(parts[p]) {
			continue
		}
		obj := parts[p][0].Input.(linInput).Obj
		states := []any{nil}
		for _, op := range longest {
			var next []any
			for _, s := range states {
				next = append(next, m.step(s, op.Input, op.Output)...)
			}
			states = next
		}
		fmt.Fprintf(&b, "partition %s: %d of %d calls linearize; after them the state is one of:\n", obj, len(longest), len(parts[p]))
		seen := map[string]bool{}
		for _, s := range states {
			if d := describeState(s); !seen[d] {
				seen[d] = true
				fmt.Fprintf(&b, "    %s\n", d)
			}
		}
		in := map[porcupine.Operation]bool{}
		for _, op := range longest {
			in[op] = true
		}
		var rest []porcupine.Operation
		for _, op := range parts[p] {
			if !in[op] {
				rest = append(rest, op)
			}
		}
		sort.Slice(rest, func(i, j int) bool { return rest[i].Return < rest[j].Return })
		b.WriteString("  and none of the calls that must come next can (earliest returns first):\n")
		for _, op := range rest[:min(5, len(rest))] {
			fmt.Fprintf(&b, "    %s\n", describeOp(op.Input, op.Output))
		}
	}
	return b.String()
}

func classify(err error) errCode {
	switch {
	case err == nil:
		return errNone
	case errors.Is(err, edgeindex.ErrLeaseLost):
		return errLost
	case errors.Is(err, lease.ErrNoWork):
		return errNoWork
	case errors.Is(err, edgeindex.ErrNotFound):
		return errNotFound
	case errors.Is(err, edgeindex.ErrInvalid):
		return errInvalid
	case errors.Is(err, edgeindex.ErrConflict):
		return errConflict
	}
	return errOther
}

// heldRange is a range lease a client holds, or believes it holds.
type heldRange struct {
	id, token, start, end, next int64
	ordered                     bool
	probe                       bool // next is uncertain: ask with a duplicate first
}

type linClient struct {
	id     int
	r      *linRunner
	rng    *rand.Rand
	node   string
	stream int
	lane   bool // works the ordered group's lanes, else the plain group
	ranges []heldRange
	lanes  []heldLane
	failed []int64 // ranges seen failed, to retry
	seq    int
}

// heldLane is a lane grant a client holds, or believes it holds.
type heldLane struct {
	lane  lease.Lane
	token int64
}

func (c *linClient) run() {
	for range c.r.cfg.Ops {
		if c.rng.Intn(40) == 0 {
			c.r.clockMu.Lock()
			c.r.e.clock.Advance(time.Duration(1+c.rng.Intn(6)) * time.Second)
			c.r.clockMu.Unlock()
		}
		if c.rng.Intn(10) == 0 {
			time.Sleep(time.Duration(c.rng.Intn(3000)) * time.Microsecond)
		}
		c.step()
	}
}

// step makes one call, chosen at random among those that make sense for
// what the client holds; stale leases are kept for a while and used too.
func (c *linClient) step() {
	type action struct {
		w  int
		fn func()
	}
	var acts []action
	switch {
	case !c.lane:
		acts = append(acts, action{2, c.grant})
		if len(c.ranges) == 0 {
			acts[0].w += 4
		}
	case len(c.lanes) == 0:
		acts = append(acts, action{4, c.grantLane})
	default:
		acts = append(acts, action{1, c.grantLane}, action{5, c.next}, action{1, c.heartbeatLane}, action{1, c.releaseLane})
	}
	if len(c.ranges) > 0 {
		acts = append(acts, action{8, c.put}, action{4, c.putMany}, action{2, c.heartbeat}, action{3, c.finish}, action{1, c.release}, action{1, c.corrupt})
	}
	if len(c.failed) > 0 {
		acts = append(acts, action{2, c.retry})
	}
	total := 0
	for _, a := range acts {
		total += a.w
	}
	n := c.rng.Intn(total)
	for _, a := range acts {
		if n < a.w {
			a.fn()
			return
		}
		n -= a.w
	}
}

// call runs one store call and records it. A call is abandoned at random:
// its context is cancelled after a random delay, and unless it still
// answered success its outcome is unknown.
func (c *linClient) call(in linInput, fn func(ctx context.Context) (linOutput, error)) linOutput {
	r := c.r
	in.Node = c.node
	in.TTL = linTTL.Microseconds()
	if in.Obj == "" {
		in.Obj = r.model.objOf(in.Range)
	}
	var out linOutput
	var err error
	t := c.timed(func(ctx context.Context) { out, err = fn(ctx) })
	in.Now = t.now
	return r.record(c, in, out, err, t.cancelled, t.call, t.ret)
}

// timing is when a call ran: the model's clock at its start, its start and
// end in ns since the run's, and whether its context was cancelled.
type timing struct {
	now, call, ret int64
	cancelled      bool
}

// timed runs fn, one store call, under the clock's read lock, abandoning
// it at random: its context is cancelled after a random delay.
func (c *linClient) timed(fn func(ctx context.Context)) timing {
	r := c.r
	abandon := c.rng.Intn(100) < linAbandonPct
	delay := time.Duration(c.rng.Intn(1500)) * time.Microsecond

	r.clockMu.RLock()
	defer r.clockMu.RUnlock()
	sp := timing{now: r.micros(r.e.clock.Now())}
	ctx, cancel := context.WithCancel(r.e.ctx)
	defer cancel()
	var timer *time.Timer
	if abandon {
		timer = time.AfterFunc(delay, cancel)
	}
	sp.call = time.Since(r.start).Nanoseconds()
	fn(ctx)
	sp.ret = time.Since(r.start).Nanoseconds()
	if timer != nil {
		timer.Stop()
	}
	sp.cancelled = ctx.Err() != nil
	return sp
}

// record records one call made between call and ret (ns since the start),
// and returns its output as the history has it: unknown when it was
// abandoned or failed unexpectedly.
func (r *linRunner) record(c *linClient, in linInput, out linOutput, err error, cancelled bool, call, ret int64) linOutput {
	out.Err = classify(err)
	key := string(in.Kind) + " "
	switch {
	case err != nil && cancelled:
		out = linOutput{Unknown: true}
		key += "?"
		r.mu.Lock()
		r.counts["abandoned"]++
		r.mu.Unlock()
	case out.Err == errOther:
		out = linOutput{Unknown: true}
		key += "?"
		r.mu.Lock()
		if len(r.unexpected) < 10 {
			r.unexpected = append(r.unexpected, fmt.Sprintf("%s %s: %v", c.node, in.Kind, err))
		}
		r.counts["unexpected errors"]++
		r.mu.Unlock()
	case out.Err == errNone:
		key += "ok"
	default:
		key += string(out.Err)
	}
	op := porcupine.Operation{ClientId: c.stream, Input: in, Call: call, Output: out, Return: ret}
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.counts[key]++
	r.mu.Unlock()
	if out.Unknown {
		// The call may still be running: the client's next call is
		// concurrent with it, so it goes on as a new stream.
		c.stream = r.newStream()
	}
	return out
}

func (c *linClient) fence(token int64) lease.Fence { return lease.Fence{Node: c.node, Token: token} }

// pick returns the index of a random held range.
func (c *linClient) pick() int { return c.rng.Intn(len(c.ranges)) }

// drop forgets a range lease, usually: a worker that was paused does not
// know yet that its lease is gone, so some stay and are used again.
func (c *linClient) drop(i int, always bool) {
	if always || c.rng.Intn(10) < 7 {
		c.ranges = append(c.ranges[:i], c.ranges[i+1:]...)
	}
}

// hold adds a lease. An older lease of the same range stays, for a while:
// a stale token in the hands of the node that holds the current one is
// what only the token check refuses.
func (c *linClient) hold(h heldRange) {
	for i, o := range c.ranges {
		if o.id == h.id && o.token == h.token {
			c.ranges[i] = h
			return
		}
	}
	c.ranges = append(c.ranges, h)
	if len(c.ranges) > 3 {
		c.ranges = c.ranges[1:]
	}
}

func (c *linClient) leaseOut(l lease.Lease) linOutput {
	return linOutput{Range: l.Range.ID, Token: l.Token, Next: l.Range.Next, Expires: c.r.micros(l.ExpiresAt),
		Attempts: l.Range.Attempts, State: l.Range.State}
}

func (c *linClient) grant() {
	e := c.r.e
	var l lease.Lease
	out := c.call(linInput{Kind: opGrant, Obj: grantObj}, func(ctx context.Context) (linOutput, error) {
		var err error
		l, err = e.Grant(ctx, c.node, linTTL)
		return c.leaseOut(l), err
	})
	if !out.Unknown && out.Err == errNone {
		c.hold(heldRange{id: l.Range.ID, token: l.Token, start: l.Range.Start, end: l.Range.End, next: l.Range.Next})
	}
	c.backoff(out)
}

// backoff waits a little after "no work", as a worker would.
func (c *linClient) backoff(out linOutput) {
	if out.Err == errNoWork {
		time.Sleep(time.Duration(c.rng.Intn(1000)) * time.Microsecond)
	}
}

func (c *linClient) grantLane() {
	e := c.r.e
	lane := lease.LaneHistory
	if c.rng.Intn(2) == 0 {
		lane = lease.LaneTail
	}
	out := c.call(linInput{Kind: opGrantLane, Obj: laneObj(lane)}, func(ctx context.Context) (linOutput, error) {
		gl, err := e.GrantLane(ctx, c.node, lane, linTTL)
		return linOutput{Token: gl.Token, Next: gl.Next, Expires: c.r.micros(gl.ExpiresAt)}, err
	})
	if !out.Unknown && out.Err == errNone {
		c.lanes = append(c.lanes, heldLane{lane: lane, token: out.Token})
		if len(c.lanes) > 2 {
			c.lanes = c.lanes[1:]
		}
	}
	c.backoff(out)
}

func (c *linClient) laneCall(kind opKind, fn func(ctx context.Context, lane lease.Lane, f lease.Fence) (linOutput, error)) (int, linOutput) {
	i := c.rng.Intn(len(c.lanes))
	h := c.lanes[i]
	out := c.call(linInput{Kind: kind, Obj: laneObj(h.lane), Token: h.token}, func(ctx context.Context) (linOutput, error) {
		return fn(ctx, h.lane, c.fence(h.token))
	})
	if !out.Unknown && out.Err == errLost && c.rng.Intn(10) < 7 {
		c.lanes = append(c.lanes[:i], c.lanes[i+1:]...)
	}
	return i, out
}

func (c *linClient) next() {
	e, g := c.r.e, c.r.ordered.ID
	var l lease.Lease
	_, out := c.laneCall(opNext, func(ctx context.Context, lane lease.Lane, f lease.Fence) (linOutput, error) {
		var err error
		l, err = e.Next(ctx, g, lane, f, linTTL)
		return c.leaseOut(l), err
	})
	if !out.Unknown && out.Err == errNone {
		c.hold(heldRange{id: l.Range.ID, token: l.Token, start: l.Range.Start, end: l.Range.End, next: l.Range.Next, ordered: true})
	}
}

func (c *linClient) heartbeatLane() {
	e, g := c.r.e, c.r.ordered.ID
	c.laneCall(opHeartbeatLane, func(ctx context.Context, lane lease.Lane, f lease.Fence) (linOutput, error) {
		exp, err := e.HeartbeatLane(ctx, g, lane, f, linTTL)
		return linOutput{Expires: c.r.micros(exp)}, err
	})
}

func (c *linClient) releaseLane() {
	e, g := c.r.e, c.r.ordered.ID
	i, out := c.laneCall(opReleaseLane, func(ctx context.Context, lane lease.Lane, f lease.Fence) (linOutput, error) {
		return linOutput{}, e.ReleaseLane(ctx, g, lane, f)
	})
	if !out.Unknown && out.Err == errNone && c.rng.Intn(10) < 7 {
		c.lanes = append(c.lanes[:i], c.lanes[i+1:]...)
	}
}

// rangeCall makes a fenced call on a held range and forgets the lease,
// usually, when it is lost.
func (c *linClient) rangeCall(i int, in linInput, fn func(ctx context.Context, f lease.Fence) (linOutput, error)) linOutput {
	h := c.ranges[i]
	in.Range, in.Token = h.id, h.token
	out := c.call(in, func(ctx context.Context) (linOutput, error) { return fn(ctx, c.fence(h.token)) })
	if !out.Unknown && out.Err == errLost {
		c.drop(i, false)
	}
	return out
}

func (c *linClient) put() {
	i := c.pick()
	h := c.ranges[i]
	if h.next > h.end && !h.probe {
		c.finishAt(i)
		return
	}
	b := c.batchFor(h)
	e := c.r.e
	out := c.rangeCall(i, linInput{Kind: opPut, From: b.From, To: b.To}, func(ctx context.Context, f lease.Fence) (linOutput, error) {
		res, err := e.Put(ctx, h.id, f, b)
		return linOutput{Next: res.Next, Dup: res.Duplicate}, err
	})
	c.putDone(h, out)
}

// batchFor returns the next batch for held range h: usually from its
// next, at times a retry of its first, a gap or an overlap.
func (c *linClient) batchFor(h heldRange) batch.Batch {
	from := h.next
	to := min(h.end, from+c.rng.Int63n(linMaxBatch))
	switch n := c.rng.Intn(25); {
	case h.probe || n == 0: // a retry of the first batch: a duplicate, or it says where next is
		from, to = h.start, h.start
	case n == 1: // a gap
		from, to = h.next+1, min(h.end, h.next+1+c.rng.Int63n(linMaxBatch))
	case n == 2 && h.next > h.start: // an overlap
		from = h.next - 1
	}
	c.seq++
	return batch.Batch{From: from, To: to, Headers: max(0, to-from+1),
		Items: []batch.Item{{Key: fmt.Sprintf("c%d-%d", c.id, c.seq), Value: []byte(`1`)}}}
}

// putDone updates held range h after a put answered out.
func (c *linClient) putDone(h heldRange, out linOutput) {
	c.update(h.id, h.token, func(h *heldRange) {
		switch {
		case out.Unknown || out.Err == errConflict || out.Err == errInvalid:
			h.probe = true
		case out.Err == errNone:
			h.next, h.probe = out.Next, false
		}
	})
}

// putMany stores a batch for each of up to three held ranges in one
// PutMany, each entry recorded as a put of its own over the call's span:
// the entries are decided and fenced as puts made at once.
func (c *linClient) putMany() {
	var picked []heldRange
	seen := map[int64]bool{}
	for range 3 {
		h := c.ranges[c.pick()]
		if seen[h.id] || (h.next > h.end && !h.probe) {
			continue
		}
		seen[h.id] = true
		picked = append(picked, h)
	}
	if len(picked) == 0 {
		c.put()
		return
	}
	r, e := c.r, c.r.e
	entries := make([]batch.Entry, len(picked))
	ins := make([]linInput, len(picked))
	for i, h := range picked {
		entries[i] = batch.Entry{RangeID: h.id, Fence: c.fence(h.token), Batch: c.batchFor(h)}
		ins[i] = linInput{Kind: opPut, Range: h.id, Token: h.token, From: entries[i].Batch.From, To: entries[i].Batch.To,
			Node: c.node, TTL: linTTL.Microseconds(), Obj: r.model.objOf(h.id)}
	}
	var answers []batch.Answer
	var err error
	t := c.timed(func(ctx context.Context) { answers, err = e.PutMany(ctx, entries, 0) })
	for i, h := range picked {
		ins[i].Now = t.now
		var out linOutput
		eerr := err
		if err == nil {
			out, eerr = linOutput{Next: answers[i].Result.Next, Dup: answers[i].Result.Duplicate}, answers[i].Err
		}
		if i > 0 {
			c.stream = r.newStream() // the entries run at once
		}
		out = r.record(c, ins[i], out, eerr, t.cancelled, t.call, t.ret)
		if !out.Unknown && out.Err == errLost {
			c.dropID(h.id, h.token)
		}
		c.putDone(h, out)
	}
}

// dropID drops held range id under token, as drop does, if still held.
func (c *linClient) dropID(id, token int64) {
	for i := range c.ranges {
		if c.ranges[i].id == id && c.ranges[i].token == token {
			c.drop(i, false)
			return
		}
	}
}

// update changes a held lease, if the client still holds it.
func (c *linClient) update(id, token int64, fn func(h *heldRange)) {
	for i := range c.ranges {
		if c.ranges[i].id == id && c.ranges[i].token == token {
			fn(&c.ranges[i])
		}
	}
}

func (c *linClient) heartbeat() {
	i := c.pick()
	e, id := c.r.e, c.ranges[i].id
	c.rangeCall(i, linInput{Kind: opHeartbeat}, func(ctx context.Context, f lease.Fence) (linOutput, error) {
		exp, err := e.Heartbeat(ctx, id, f, linTTL)
		return linOutput{Expires: c.r.micros(exp)}, err
	})
}

func (c *linClient) finish() { c.finishAt(c.pick()) }

func (c *linClient) finishAt(i int) {
	e, id, token := c.r.e, c.ranges[i].id, c.ranges[i].token
	out := c.rangeCall(i, linInput{Kind: opFinish}, func(ctx context.Context, f lease.Fence) (linOutput, error) {
		return linOutput{}, e.Finish(ctx, id, f)
	})
	switch {
	case !out.Unknown && out.Err == errNone:
		c.drop(i, false)
	case out.Err == errConflict:
		c.update(id, token, func(h *heldRange) { h.probe = true })
	}
}

func (c *linClient) release() {
	i := c.pick()
	e, id := c.r.e, c.ranges[i].id
	out := c.rangeCall(i, linInput{Kind: opRelease}, func(ctx context.Context, f lease.Fence) (linOutput, error) {
		return linOutput{}, e.Release(ctx, id, f)
	})
	if !out.Unknown && out.Err == errNone {
		c.drop(i, false)
	}
}

func (c *linClient) corrupt() {
	i := c.pick()
	h := c.ranges[i]
	chunks := (h.end - h.start + linChunkSize) / linChunkSize
	from := h.start + c.rng.Int63n(chunks)*linChunkSize
	if c.rng.Intn(10) == 0 {
		from++ // not a chunk's start
	}
	e := c.r.e
	out := c.rangeCall(i, linInput{Kind: opCorrupt, From: from}, func(ctx context.Context, f lease.Fence) (linOutput, error) {
		rg, err := e.Corrupt(ctx, h.id, f, from, "linearize")
		return linOutput{State: rg.State, Attempts: rg.Attempts, Next: rg.Next}, err
	})
	if !out.Unknown && out.Err == errNone {
		if out.State == lease.StateFailed {
			c.failed = append(c.failed, h.id)
		}
		c.drop(i, false)
	}
}

func (c *linClient) retry() {
	i := c.rng.Intn(len(c.failed))
	id := c.failed[i]
	c.failed = append(c.failed[:i], c.failed[i+1:]...)
	group := c.r.plain.Name
	if _, ok := c.r.model.init[c.r.model.objOf(id)].(laneState); ok {
		group = c.r.ordered.Name
	}
	e := c.r.e
	c.call(linInput{Kind: opRetry, Range: id}, func(ctx context.Context) (linOutput, error) {
		n, err := e.Retry(ctx, group, id)
		return linOutput{N: n}, err
	})
}
