package edge_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/edgeframe"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/sources"
)

// coord is a small in-memory coordinator that implements the slices of
// docs/api.md's node API the client and worker tests need: one node, fencing by
// token, the exactly-once batch rule (batch.Classify), finish, release,
// corrupt, plain range grants, group lanes with ordered next and snapshots.
// It has no expiry. Tests inject faults through before and lose.
//
// It is no substitute for the real coordinator package: internal/e2e and
// cmd/edgeworker run the client against that one.
type coord struct {
	src   *sources.Synthetic
	token string // the node token

	// before, when set, runs first for every request; a status other than 0
	// answers it with that status and {"error": msg, "code"} instead (see
	// writeFault). A status of -1 drops the connection without an answer.
	before func(r *http.Request) (status int, msg string)
	// lose, when set and true for a request, serves it but answers 503, as
	// if the answer were lost on the way.
	lose func(r *http.Request) bool

	logMu sync.Mutex
	// calls is "METHOD path status" of every request, in arrival order,
	// and after a POST /v1/batches one line an entry, as the call it
	// stands for: "POST /v1/ranges/{id}/batch status (in /v1/batches)".
	calls []string

	mu       sync.Mutex
	chunk    int64
	ranges   []*crange
	lanes    []*clane
	stored   []batch.Batch // every stored batch, in order
	cutAt    []int         // per stream opened: cut it after that many chunks (-1: never)
	abortMsg string        // when set, streams send this error frame instead of chunks
	keep     bool          // a keepalive before every chunk
	data     map[int64][]byte
	// ignoreFrom makes streams ignore ?from=, as a coordinator that does
	// not know it; froms records the from of every stream opened (0: none).
	ignoreFrom bool
	froms      []int64
	// finals makes a final batch finish its range and answer done, as the
	// real coordinator does; without it the fake is one that predates
	// final batches and takes the field as an ordinary one.
	finals bool
	// handOver makes a final batch posted with ?then=lease carry the next
	// plain range in its answer, as the real coordinator does; without it
	// the fake ignores the query, as one that predates it.
	handOver bool
	// single makes the fake one that predates the many-range calls: they
	// get the mux's 404.
	single bool
	// jsonOnly makes the fake one that predates the binary batch layout:
	// it reads every batch body as JSON.
	jsonOnly bool
}

// sentBatch decodes body, the body of a single-range batch request r, in
// the layout its Content-Type names; false for any other request or a
// body that does not decode.
func sentBatch(r *http.Request, body []byte) (batch.Batch, bool) {
	if !strings.HasSuffix(r.URL.Path, "/batch") {
		return batch.Batch{}, false
	}
	var b batch.Batch
	var err error
	if r.Header.Get("Content-Type") == api.BatchType {
		b, err = edgeframe.DecodeBatchBinary(bytes.NewReader(body), int64(len(body)), 0)
	} else {
		b, err = edgeframe.DecodeBatch(bytes.NewReader(body), 0)
	}
	return b, err == nil
}

// readSent is sentBatch of r's body, which it leaves to be read again.
func readSent(r *http.Request) (batch.Batch, bool) {
	if r.Body == nil {
		return batch.Batch{}, false
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	return sentBatch(r, body)
}

// decodeBatch reads the batch body of req as the real server does: in the
// binary layout when its Content-Type says so (unless jsonOnly), else as
// JSON.
func (c *coord) decodeBatch(req *http.Request) (batch.Batch, error) {
	raw, _ := io.ReadAll(req.Body)
	if req.Header.Get("Content-Type") == api.BatchType && !c.jsonOnly {
		return edgeframe.DecodeBatchBinary(bytes.NewReader(raw), int64(len(raw)), 1<<20)
	}
	return edgeframe.DecodeBatch(bytes.NewReader(raw), 1<<20)
}

type crange struct {
	lease.Range
	token     int64
	ordered   bool
	laneToken int64 // the lane grant it was handed out under
}

type clane struct {
	gid      int64
	group    string
	lane     lease.Lane
	token    int64
	held     bool
	snap     []byte
	snapNext int64
	hasSnap  bool
}

func newCoord(chunk int64) *coord {
	src, err := sources.NewSynthetic(sources.SyntheticConfig{})
	if err != nil {
		panic(err)
	}
	return &coord{src: src, token: "node-secret", chunk: chunk, data: map[int64][]byte{}}
}

// failFirst makes c answer the first n requests whose path ends in
// suffix with status and msg (as before does; -1 drops the connection).
func (c *coord) failFirst(suffix string, n int32, status int, msg string) {
	var seen atomic.Int32
	c.before = func(r *http.Request) (int, string) {
		if strings.HasSuffix(r.URL.Path, suffix) && seen.Add(1) <= n {
			return status, msg
		}
		return 0, ""
	}
}

// start serves c on a new httptest server and returns it.
func (c *coord) start() *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/lease", c.grant)
	if !c.single {
		mux.HandleFunc("POST /v1/leases", c.grantMany)
		mux.HandleFunc("POST /v1/batches", c.postBatches)
		mux.HandleFunc("POST /v1/heartbeats", c.heartbeats)
	}
	mux.HandleFunc("GET /v1/ranges/{id}/stream", c.stream)
	mux.HandleFunc("POST /v1/ranges/{id}/{verb}", c.rangeCall)
	mux.HandleFunc("POST /v1/groups/lease", c.grantLane)
	mux.HandleFunc("POST /v1/groups/{id}/{verb}", c.laneCall)
	mux.HandleFunc("PUT /v1/groups/{id}/snapshot", c.putSnapshot)
	mux.HandleFunc("GET /v1/groups/{id}/snapshot", c.getSnapshot)
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A call is logged in the order it arrives, with its status as soon
		// as it is sent (a stream's lasts longer than the calls after it).
		c.logMu.Lock()
		c.calls = append(c.calls, r.Method+" "+r.URL.Path+" 0")
		rec := &statusRecorder{ResponseWriter: w, c: c, i: len(c.calls) - 1, call: r.Method + " " + r.URL.Path}
		c.logMu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+c.token {
			writeErr(rec, 401, api.CodeUnauthorized, "a missing or unknown node token")
			return
		}
		if c.before != nil {
			if status, msg := c.before(r); status == -1 {
				rec.WriteHeader(-1)
				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					conn.Close()
				}
				return
			} else if status != 0 {
				writeFault(rec, status, msg)
				return
			}
		}
		if c.lose != nil && c.lose(r) {
			mux.ServeHTTP(httptest.NewRecorder(), r)
			writeFault(rec, 503, "the answer was lost")
			return
		}
		mux.ServeHTTP(rec, r)
	}))
}

// statusRecorder writes the status of a call into the coord's log.
type statusRecorder struct {
	http.ResponseWriter
	c      *coord
	i      int
	call   string
	status bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status {
		return
	}
	s.status = true
	s.c.logMu.Lock()
	s.c.calls[s.i] = s.call + " " + strconv.Itoa(code)
	s.c.logMu.Unlock()
	if code > 0 {
		s.ResponseWriter.WriteHeader(code)
	}
}

func (s *statusRecorder) Write(p []byte) (int, error) {
	s.WriteHeader(http.StatusOK)
	return s.ResponseWriter.Write(p)
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// writeErr answers an error as the coordinator does: its status, and a
// body with its sentence and code.
func writeErr(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(api.ErrorBody{Error: msg, Code: code})
}

// writeFault answers a fault a test injects through before, with the code
// the coordinator would send for it: a 5xx none (as a proxy in between
// would not), a 4xx the code of its status, and a 409 lease_lost when the
// test's sentence stands for a lost lease. This is the fake server choosing
// what to say, as a real one chooses from its error; the client under test
// reads only the status and the code.
func writeFault(w http.ResponseWriter, status int, msg string) {
	code := ""
	if kind := api.ErrorOf(status, ""); status < 500 && kind != api.ErrProtocol {
		_, code = api.StatusOf(kind)
	}
	if status == http.StatusConflict && strings.Contains(msg, "lease lost") {
		code = api.CodeLeaseLost
	}
	writeErr(w, status, code, msg)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// addRange adds a range of an unordered group and returns its id.
func (c *coord) addRange(group string, start, end int64) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := int64(len(c.ranges) + 1)
	c.ranges = append(c.ranges, &crange{Range: lease.Range{
		ID: id, Group: group, GroupID: 1, Lane: lease.LaneHistory, Start: start, End: end, Next: start, State: lease.StatePending,
	}})
	return id
}

// addLane adds an ordered group's lane with ranges of size articles over
// [from, to], and returns the group id.
func (c *coord) addLane(group string, lane lease.Lane, from, to, size int64) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	gid := int64(100 + len(c.lanes))
	c.lanes = append(c.lanes, &clane{gid: gid, group: group, lane: lane})
	for _, s := range lease.Spans(from, to, size) {
		id := int64(len(c.ranges) + 1)
		c.ranges = append(c.ranges, &crange{ordered: true, Range: lease.Range{
			ID: id, Group: group, GroupID: gid, Lane: lane, Start: s.From, End: s.To, Next: s.From, State: lease.StatePending,
		}})
	}
	return gid
}

func (c *coord) rng(id int64) lease.Range {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ranges[id-1].Range
}

func (c *coord) setNext(id, next int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ranges[id-1].Next = next
}

func (c *coord) setSnapshot(gid int64, gz []byte, next int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.lanes {
		if l.gid == gid {
			l.snap, l.snapNext, l.hasSnap = gz, next, true
		}
	}
}

func (c *coord) setState(id int64, st lease.State) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ranges[id-1].State = st
}

// expireLane lets a lane's grant lapse, as its TTL passing would: its ranges
// stay leased under the old grant until the next grant's next hands them on.
func (c *coord) expireLane(gid int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.lanes {
		if l.gid == gid {
			l.held = false
		}
	}
}

// streamFroms returns the from asked by every stream opened (0: none).
func (c *coord) streamFroms() []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.froms)
}

func (c *coord) callLog() []string {
	c.logMu.Lock()
	defer c.logMu.Unlock()
	return slices.Clone(c.calls)
}

func (c *coord) batches() []batch.Batch {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.stored)
}

func (c *coord) laneState(gid int64) clane {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.lanes {
		if l.gid == gid {
			return *l
		}
	}
	panic("no lane")
}

func (c *coord) lease(r *crange) lease.Lease {
	return lease.Lease{Range: r.Range, Token: r.token, ExpiresAt: time.Now().Add(time.Minute).UTC(),
		TTL: lease.Seconds(time.Minute), ChunkSize: c.chunk}
}

func (c *coord) grant(w http.ResponseWriter, _ *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l := c.grantLocked(); l != nil {
		writeJSON(w, *l)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// grantMany answers POST /v1/leases?max=N with up to N grants.
func (c *coord) grantMany(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.Atoi(r.URL.Query().Get("max"))
	if err != nil || n < 1 || n > api.MaxLeases {
		writeErr(w, 400, api.CodeInvalid, "max: 1 to 256")
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ans := api.LeasesReply{Leases: []lease.Lease{}}
	for range n {
		l := c.grantLocked()
		if l == nil {
			break
		}
		ans.Leases = append(ans.Leases, *l)
	}
	writeJSON(w, ans)
}

// postBatches answers POST /v1/batches: each entry as POST
// /v1/ranges/{id}/batch answers it (rangeCall), in turn.
func (c *coord) postBatches(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	bs, err := edgeframe.DecodeBatches(bytes.NewReader(raw), int64(len(raw)), 1<<20, 0)
	if err != nil {
		status, code := api.StatusOf(err)
		writeErr(w, status, code, err.Error())
		return
	}
	ans := api.BatchesReply{Results: []api.RangeBatchReply{}}
	for _, rb := range bs {
		body, _ := edgeframe.MarshalBatch(rb.Batch)
		one := api.RangeBatchReply{Range: rb.Range}
		if rec := c.entryCall("/v1/batches", rb.Range, rb.Token, "batch", r.URL.RawQuery, body, &one.Error, &one.Code); rec != nil {
			one.BatchReply = &api.BatchReply{}
			json.Unmarshal(rec.Body.Bytes(), one.BatchReply)
		}
		ans.Results = append(ans.Results, one)
	}
	writeJSON(w, ans)
}

// entryCall answers an entry of the call of many to path as POST
// /v1/ranges/{id}/{verb}?query answers it (rangeCall), and logs it as that
// call, marked. It returns the answer when it is a 200, and otherwise
// sets the entry's error and code from the error body.
func (c *coord) entryCall(path string, id, token int64, verb, query string, body []byte, msg, code *string) *httptest.ResponseRecorder {
	sid := strconv.FormatInt(id, 10)
	sub := httptest.NewRequest(http.MethodPost, "/v1/ranges/"+sid+"/"+verb+"?"+query, bytes.NewReader(body))
	sub.SetPathValue("id", sid)
	sub.SetPathValue("verb", verb)
	sub.Header.Set("Lease-Token", strconv.FormatInt(token, 10))
	rec := httptest.NewRecorder()
	c.rangeCall(rec, sub)
	c.logMu.Lock()
	c.calls = append(c.calls, fmt.Sprintf("POST /v1/ranges/%s/%s %d (in %s)", sid, verb, rec.Code, path))
	c.logMu.Unlock()
	if rec.Code == http.StatusOK {
		return rec
	}
	var e api.ErrorBody
	json.Unmarshal(rec.Body.Bytes(), &e)
	*msg, *code = e.Error, e.Code
	return nil
}

// heartbeats answers POST /v1/heartbeats as one heartbeat call a range
// would, each logged as that call, marked.
func (c *coord) heartbeats(w http.ResponseWriter, r *http.Request) {
	var body api.FinishesRequest
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || len(body.Ranges) == 0 {
		writeErr(w, 400, api.CodeInvalid, "ranges: a list of ranges and tokens")
		return
	}
	ans := api.HeartbeatsReply{Results: []api.HeartbeatReply{}}
	for _, rt := range body.Ranges {
		one := api.HeartbeatReply{Range: rt.Range}
		if rec := c.entryCall("/v1/heartbeats", rt.Range, rt.Token, "heartbeat", "", nil, &one.Error, &one.Code); rec != nil {
			var exp api.Expiry
			json.Unmarshal(rec.Body.Bytes(), &exp)
			one.ExpiresAt = &exp.ExpiresAt
		}
		ans.Results = append(ans.Results, one)
	}
	writeJSON(w, ans)
}

// grantLocked grants the first pending plain range; nil when none is.
// c.mu is held.
func (c *coord) grantLocked() *lease.Lease {
	for _, r := range c.ranges {
		if !r.ordered && r.State == lease.StatePending {
			r.State, r.token = lease.StateLeased, r.token+1
			l := c.lease(r)
			return &l
		}
	}
	return nil
}

// held finds the range of the request and checks its Lease-Token. It
// answers the error and returns nil when that fails. c.mu is held.
func (c *coord) held(w http.ResponseWriter, req *http.Request) *crange {
	id, err := strconv.ParseInt(req.PathValue("id"), 10, 64)
	if err != nil || id < 1 || id > int64(len(c.ranges)) {
		writeErr(w, 404, api.CodeNotFound, "no such range")
		return nil
	}
	r := c.ranges[id-1]
	tok, err := strconv.ParseInt(req.Header.Get("Lease-Token"), 10, 64)
	if err != nil || tok != r.token || r.State != lease.StateLeased {
		writeErr(w, 409, api.CodeLeaseLost, fmt.Sprintf("range %d: lease lost: token %s is not current", id, req.Header.Get("Lease-Token")))
		return nil
	}
	return r
}

func (c *coord) stream(w http.ResponseWriter, req *http.Request) {
	c.mu.Lock()
	r := c.held(w, req)
	if r == nil {
		c.mu.Unlock()
		return
	}
	rg, cut, abort, keep := r.Range, -1, c.abortMsg, c.keep
	if len(c.cutAt) > 0 {
		cut, c.cutAt = c.cutAt[0], c.cutAt[1:]
	}
	// ?from=N begins at the chunk holding N instead of next; N must lie in
	// [start, next].
	from := min(rg.Next, rg.End)
	var asked int64
	if raw := req.URL.Query().Get("from"); raw != "" {
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || n < rg.Start || n > rg.Next {
			c.mu.Unlock()
			writeErr(w, 400, api.CodeInvalid, fmt.Sprintf("range %d: from %q is not in %d..%d", rg.ID, raw, rg.Start, rg.Next))
			return
		}
		asked = n
		if !c.ignoreFrom {
			from = min(n, rg.End)
		}
	}
	c.froms = append(c.froms, asked)
	c.mu.Unlock()

	w.Header().Set("Content-Type", edgeframe.ContentType)
	w.WriteHeader(http.StatusOK)
	fw := edgeframe.NewWriter(w)
	if abort != "" {
		fw.Error(abort)
		return
	}
	first, _ := lease.SpanAt(rg.Start, rg.End, c.chunk, from)
	sent := 0
	for _, s := range lease.Spans(rg.Start, rg.End, c.chunk) {
		if s.From < first.From {
			continue
		}
		if sent == cut {
			return // cut: no end frame
		}
		if keep {
			fw.Keepalive()
		}
		c.mu.Lock()
		data, ok := c.data[s.From]
		c.mu.Unlock()
		if !ok {
			var err error
			if data, err = c.src.Fetch(req.Context(), rg.Group, s); err != nil {
				fw.Error(err.Error())
				return
			}
		}
		if fw.Chunk(s.From, s.To, data) != nil {
			return
		}
		http.NewResponseController(w).Flush()
		sent++
	}
	fw.End()
}

func (c *coord) rangeCall(w http.ResponseWriter, req *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if req.PathValue("verb") == "batch" {
		// Decode before the lease check, as a real server reads the body.
		b, err := c.decodeBatch(req)
		if err != nil {
			status, code := api.StatusOf(err)
			writeErr(w, status, code, err.Error())
			return
		}
		r := c.held(w, req)
		if r == nil {
			return
		}
		switch out, err := batch.Classify(r.Next, r.End, b); out {
		case batch.Accept:
			c.stored = append(c.stored, b)
			r.Next, r.Headers = b.To+1, r.Headers+b.Headers
			done := c.finals && b.Final
			if done {
				r.State = lease.StateDone
			}
			reply := api.BatchReply{Result: batch.Result{Next: r.Next, Done: done}}
			if done && c.handOver && req.URL.Query().Get("then") == api.ThenLease {
				reply.Lease = c.grantLocked()
			}
			writeJSON(w, reply)
		case batch.Duplicate:
			done := c.finals && b.Final
			if done {
				r.State = lease.StateDone
			}
			writeJSON(w, batch.Result{Next: r.Next, Duplicate: true, Done: done})
		default: // malformed (400), a gap or an overlap (409)
			status, code := api.StatusOf(err)
			writeErr(w, status, code, err.Error())
		}
		return
	}
	r := c.held(w, req)
	if r == nil {
		return
	}
	switch req.PathValue("verb") {
	case "heartbeat":
		writeJSON(w, map[string]any{"expiresAt": time.Now().Add(time.Minute).UTC()})
	case "finish":
		if r.Next <= r.End {
			writeErr(w, 409, api.CodeConflict, fmt.Sprintf("range %d: batches reach %d but the range ends at %d", r.ID, r.Next-1, r.End))
			return
		}
		r.State = lease.StateDone
		writeJSON(w, map[string]bool{"ok": true})
	case "release":
		r.State = lease.StatePending
		writeJSON(w, map[string]bool{"ok": true})
	case "corrupt":
		var body struct{ From int64 }
		if err := json.NewDecoder(req.Body).Decode(&body); err != nil ||
			!lease.IsChunkStart(r.Start, r.End, c.chunk, body.From) {
			writeErr(w, 400, api.CodeInvalid, fmt.Sprintf("range %d: %d is not the start of one of its chunks", r.ID, body.From))
			return
		}
		delete(c.data, body.From)
		r.Attempts++
		r.State = lease.StatePending
		if r.Attempts >= 5 {
			r.State = lease.StateFailed
		}
		writeJSON(w, map[string]any{"state": r.State, "attempts": r.Attempts})
	default:
		writeErr(w, 404, api.CodeNotFound, "no such call")
	}
}

// laneOf finds the lane of the request; check also checks its Lease-Token.
// c.mu is held.
func (c *coord) laneOf(w http.ResponseWriter, req *http.Request, check bool) *clane {
	lane, err := lease.ParseLane(req.URL.Query().Get("lane"))
	if err != nil {
		writeErr(w, 400, api.CodeInvalid, err.Error())
		return nil
	}
	gid, _ := strconv.ParseInt(req.PathValue("id"), 10, 64)
	for _, l := range c.lanes {
		if l.gid != gid || l.lane != lane {
			continue
		}
		if check && (!l.held || req.Header.Get("Lease-Token") != strconv.FormatInt(l.token, 10)) {
			writeErr(w, 409, api.CodeLeaseLost, fmt.Sprintf("group %d lane %s: lease lost", gid, lane))
			return nil
		}
		return l
	}
	writeErr(w, 404, api.CodeNotFound, "no such group")
	return nil
}

// laneRanges returns the lane's ranges in article order. c.mu is held.
func (c *coord) laneRanges(l *clane) []*crange {
	var out []*crange
	for _, r := range c.ranges {
		if r.ordered && r.GroupID == l.gid && r.Lane == l.lane {
			out = append(out, r)
		}
	}
	return out
}

func (c *coord) grantLane(w http.ResponseWriter, req *http.Request) {
	lane, err := lease.ParseLane(req.URL.Query().Get("lane"))
	if err != nil {
		writeErr(w, 400, api.CodeInvalid, err.Error())
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.lanes {
		if l.lane != lane || l.held {
			continue
		}
		next := int64(-1)
		for _, r := range c.laneRanges(l) {
			if r.State != lease.StateDone {
				next = r.Next
				break
			}
		}
		if next < 0 {
			continue // no work
		}
		l.held, l.token = true, l.token+1
		const ttl = 90 * time.Second // unlike ranges' 60 s, so tests tell their heartbeats apart
		gl := grouplease.GroupLease{Group: grouplease.GroupRef{ID: l.gid, Name: l.group}, Lane: l.lane, Token: l.token,
			ExpiresAt: time.Now().Add(ttl).UTC(), TTL: lease.Seconds(ttl), Next: next}
		if l.hasSnap {
			gl.Snapshot = &grouplease.Snapshot{Next: l.snapNext, Size: int64(len(l.snap))}
		}
		writeJSON(w, gl)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (c *coord) laneCall(w http.ResponseWriter, req *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.laneOf(w, req, true)
	if l == nil {
		return
	}
	switch req.PathValue("verb") {
	case "next":
		for _, r := range c.laneRanges(l) {
			switch r.State {
			case lease.StateDone:
				continue
			case lease.StateFailed:
				w.WriteHeader(http.StatusNoContent)
				return
			}
			if r.State != lease.StateLeased || r.laneToken != l.token {
				r.State, r.token, r.laneToken = lease.StateLeased, r.token+1, l.token
			}
			writeJSON(w, c.lease(r))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	case "heartbeat":
		w.WriteHeader(http.StatusOK) // the contract names no body
	case "release":
		l.held = false
		for _, r := range c.laneRanges(l) {
			if r.State == lease.StateLeased && r.laneToken == l.token {
				r.State = lease.StatePending
			}
		}
		w.WriteHeader(http.StatusOK)
	default:
		writeErr(w, 404, api.CodeNotFound, "no such call")
	}
}

func (c *coord) putSnapshot(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.laneOf(w, req, true)
	if l == nil {
		return
	}
	next, err := strconv.ParseInt(req.URL.Query().Get("next"), 10, 64)
	if err != nil || !bytes.HasPrefix(body, []byte{0x1f, 0x8b}) {
		writeErr(w, 400, api.CodeInvalid, "snapshot: next is required and the body must be gzip")
		return
	}
	if l.hasSnap && next < l.snapNext {
		writeErr(w, 409, api.CodeConflict, fmt.Sprintf("snapshot at %d is older than the stored one at %d", next, l.snapNext))
		return
	}
	l.snap, l.snapNext, l.hasSnap = body, next, true
	writeJSON(w, grouplease.Snapshot{Next: next, Size: int64(len(body))})
}

func (c *coord) getSnapshot(w http.ResponseWriter, req *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.laneOf(w, req, true)
	if l == nil {
		return
	}
	if !l.hasSnap {
		writeErr(w, 404, api.CodeNotFound, "the lane has no snapshot")
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(l.snap)))
	w.Header().Set("X-Snapshot-Next", strconv.FormatInt(l.snapNext, 10))
	w.Write(l.snap)
}

// countCalls counts the calls in log whose "METHOD path" has the prefix.
func countCalls(log []string, prefix string) int {
	return countIf(log, func(c string) bool { return strings.HasPrefix(c, prefix) })
}

// countIf counts the calls of log that match.
func countIf(log []string, match func(string) bool) int {
	n := 0
	for _, c := range log {
		if match(c) {
			n++
		}
	}
	return n
}

// waitFunc is an injected clock.Clock whose After calls f with the wait
// asked: the wait has passed at once when f returns true, and never comes
// by itself when it returns false (clock.Sleep then waits for ctx).
type waitFunc func(d time.Duration) bool

func (f waitFunc) Now() time.Time { return time.Now() }

func (f waitFunc) After(d time.Duration) <-chan time.Time {
	if !f(d) {
		return nil // a nil channel never receives
	}
	ch := make(chan time.Time, 1)
	ch <- time.Now()
	return ch
}

// blockClock is a clock whose waits end only with their ctx: nothing it is
// asked to wait for ever comes by itself.
var blockClock = waitFunc(func(time.Duration) bool { return false })
