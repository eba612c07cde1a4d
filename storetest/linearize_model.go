package storetest

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"

	"github.com/anishathalye/porcupine"

	"github.com/edgeindex/edgeindex/lease"
)

// The sequential model RunLinearizable checks histories against: the wire
// contract's rules for one range (an unordered group's), and for one lane
// together with its ranges (an ordered group's: a lane grant fences them).
// Each is a partition of the history, checked on its own.
//
// Time is the injected clock, an input of every operation: no operation runs
// while the clock moves, so each one read a known instant. Times are
// microseconds since the clock's start.

// opKind names a store call.
type opKind string

const (
	opGrant         opKind = "grant"
	opHeartbeat     opKind = "heartbeat"
	opPut           opKind = "put"
	opFinish        opKind = "finish"
	opRelease       opKind = "release"
	opCorrupt       opKind = "corrupt"
	opRetry         opKind = "retry"
	opGrantLane     opKind = "grantLane"
	opNext          opKind = "next"
	opHeartbeatLane opKind = "heartbeatLane"
	opReleaseLane   opKind = "releaseLane"
)

// errCode is how a call answered: "" for success, else the sentinel its
// error wraps.
type errCode string

const (
	errNone     errCode = ""
	errLost     errCode = "lease_lost"
	errNoWork   errCode = "no_work"
	errNotFound errCode = "not_found"
	errInvalid  errCode = "invalid"
	errConflict errCode = "conflict"
	errOther    errCode = "other" // no sentinel: a database error, a cancelled context
)

// linInput is one call as the client made it.
type linInput struct {
	Obj   string // the partition: "r<id>" for an unordered range, "lane:<lane>" for an ordered group's lane and its ranges
	Kind  opKind
	Node  string
	Now   int64 // the clock during the call
	TTL   int64
	Range int64 // range calls
	Token int64 // the fence's token (range or lane)
	From  int64 // put, corrupt
	To    int64 // put
}

// linOutput is the answer, or Unknown when the call was abandoned (its
// context cancelled) or failed without a sentinel: it may have taken
// effect, or not.
type linOutput struct {
	Unknown  bool
	Err      errCode
	Range    int64 // grant, next: the range leased
	Token    int64 // grant, next, grantLane
	Next     int64 // grant, next, grantLane (the lane's next); put's result
	Expires  int64 // grant, next, grantLane, heartbeats
	Attempts int   // grant, next, corrupt
	State    lease.State
	Dup      bool // put
	N        int  // retry
}

// rangeState is one range as the contract sees it.
type rangeState struct {
	ID, Start, End, Chunk int64
	Ordered               bool
	State                 lease.State
	Next                  int64
	Attempts              int
	// The lease, while State is leased.
	Holder    string
	Token     int64 // the current token, when Known
	Known     bool  // false after a grant whose answer was lost: no fence a client holds matches it
	Issued    int64 // every token granted so far is at most Issued (or, unknown, at least it): a new grant's exceeds it
	LaneToken int64 // the lane grant it was leased under
	Expires   int64
}

// laneState is an ordered group's lane and its ranges, by start.
type laneState struct {
	Holder  string
	Token   int64
	Known   bool
	Issued  int64
	Expires int64
	Ranges  []rangeState
}

// linModel is the sequential specification.
type linModel struct {
	init        map[string]any   // partition -> initial state
	objs        map[int64]string // range id -> partition
	skipLocked  bool             // a lane grant may answer no work while another transaction holds the row
	maxAttempts int
}

func (r rangeState) normal() rangeState {
	if r.State != lease.StateLeased {
		r.Holder, r.Token, r.Known, r.LaneToken, r.Expires = "", 0, false, 0, 0
	}
	return r
}

func (l laneState) normal() laneState {
	if l.Holder == "" {
		l.Token, l.Known, l.Expires = 0, false, 0
	}
	return l
}

func (r rangeState) held(node string, token int64) bool {
	return r.State == lease.StateLeased && r.Known && r.Holder == node && r.Token == token
}

// leased returns r granted to node: with the token the answer names, or,
// when the answer is unknown, with a token no client knows.
func (r rangeState) leased(node string, out *linOutput, expires, laneToken int64) rangeState {
	r.State, r.Holder, r.Expires, r.LaneToken = lease.StateLeased, node, expires, laneToken
	if out != nil {
		r.Token, r.Known, r.Issued = out.Token, true, out.Token
	} else {
		r.Token, r.Known, r.Issued = 0, false, r.Issued+1
	}
	return r
}

// step is the nondeterministic step: an unknown outcome forks the state
// into "never happened" and "happened", as etcd's robustness model does
// for a request whose answer was lost; porcupine lets such a call take
// effect at any point after it began, since its return is put at the end
// of the history.
func (m *linModel) step(state, input, output any) []any {
	in, out := input.(linInput), output.(linOutput)
	if state == nil {
		if state = m.init[in.Obj]; state == nil {
			return nil // a range that does not exist
		}
	}
	if out.Unknown {
		next, _ := m.apply(state, in, nil)
		if linEqual(next, state) {
			return []any{state}
		}
		return []any{state, next}
	}
	next, ok := m.apply(state, in, &out)
	if !ok {
		return nil
	}
	return []any{next}
}

// apply runs one call on a partition's state. out is the call's answer, to
// be checked, or nil when it is unknown.
func (m *linModel) apply(state any, in linInput, out *linOutput) (any, bool) {
	switch s := state.(type) {
	case rangeState:
		r, ok := m.rangeOp(s, in, out)
		return r.normal(), ok
	case laneState:
		l, ok := m.laneOp(s, in, out)
		return l, ok
	}
	panic(fmt.Sprintf("linearize: no state for %q", in.Obj))
}

// answered reports whether the answer (if known) is the error code want.
func answered(out *linOutput, want errCode) bool { return out == nil || out.Err == want }

func (m *linModel) rangeOp(r rangeState, in linInput, out *linOutput) (rangeState, bool) {
	held := r.held(in.Node, in.Token)
	switch in.Kind {
	case opGrant:
		// Only a grant that answered with this range, or whose answer is
		// unknown, is in this range's partition. An expired lease is only
		// eligible; ordered ranges go only through lanes.
		eligible := !r.Ordered && (r.State == lease.StatePending || (r.State == lease.StateLeased && r.Expires < in.Now))
		if out == nil {
			if eligible {
				return r.leased(in.Node, nil, in.Now+in.TTL, 0), true
			}
			return r, true
		}
		if !eligible || out.Err != errNone || out.Range != r.ID || out.Token <= r.Issued || out.Next != r.Next ||
			out.Attempts != r.Attempts || out.State != lease.StateLeased || out.Expires != in.Now+in.TTL {
			return r, false
		}
		return r.leased(in.Node, out, in.Now+in.TTL, 0), true

	case opHeartbeat:
		if !held {
			return r, answered(out, errLost)
		}
		if out != nil && (out.Err != errNone || out.Expires != in.Now+in.TTL) {
			return r, false
		}
		r.Expires = in.Now + in.TTL
		return r, true

	case opPut:
		if !held {
			return r, answered(out, errLost)
		}
		switch {
		case in.From > in.To || in.To > r.End:
			return r, answered(out, errInvalid)
		case in.From == r.Next:
			if out != nil && (out.Err != errNone || out.Dup || out.Next != in.To+1) {
				return r, false
			}
			r.Next = in.To + 1
			return r, true
		case in.To < r.Next:
			return r, out == nil || (out.Err == errNone && out.Dup && out.Next == r.Next)
		default: // a gap or an overlap
			return r, answered(out, errConflict)
		}

	case opFinish:
		if !held {
			return r, answered(out, errLost)
		}
		if r.Next <= r.End {
			return r, answered(out, errConflict)
		}
		if !answered(out, errNone) {
			return r, false
		}
		r.State = lease.StateDone
		return r, true

	case opRelease:
		if !held {
			return r, answered(out, errLost)
		}
		if !answered(out, errNone) {
			return r, false
		}
		r.State = lease.StatePending
		return r, true

	case opCorrupt:
		if !held {
			return r, answered(out, errLost)
		}
		if in.From < r.Start || in.From > r.End || (in.From-r.Start)%r.Chunk != 0 {
			return r, answered(out, errInvalid)
		}
		r.Attempts++
		r.State = lease.StatePending
		if r.Attempts >= m.maxAttempts {
			r.State = lease.StateFailed
		}
		return r, out == nil || (out.Err == errNone && out.State == r.State && out.Attempts == r.Attempts && out.Next == r.Next)

	case opRetry:
		n := 0
		if r.State == lease.StateFailed {
			r.State, r.Attempts, n = lease.StatePending, 0, 1
		}
		return r, out == nil || (out.Err == errNone && out.N == n)
	}
	panic(fmt.Sprintf("linearize: %s on a range", in.Kind))
}

// head is the index of the lane's first range not done, or -1.
func (l laneState) head() int {
	for i, r := range l.Ranges {
		if r.State != lease.StateDone {
			return i
		}
	}
	return -1
}

func (l laneState) withRange(i int, r rangeState) laneState {
	rs := make([]rangeState, len(l.Ranges))
	copy(rs, l.Ranges)
	rs[i] = r.normal()
	l.Ranges = rs
	return l
}

func (m *linModel) laneOp(l laneState, in linInput, out *linOutput) (laneState, bool) {
	held := l.Holder == in.Node && l.Known && l.Token == in.Token
	switch in.Kind {
	case opGrantLane:
		h := l.head()
		eligible := (l.Holder == "" || l.Expires < in.Now) && h >= 0 &&
			(l.Ranges[h].State == lease.StatePending || l.Ranges[h].State == lease.StateLeased)
		if out != nil && out.Err == errNoWork {
			return l, !eligible || m.skipLocked
		}
		if !eligible {
			return l, out == nil
		}
		if out != nil && (out.Err != errNone || out.Token <= l.Issued || out.Next != l.Ranges[h].Next || out.Expires != in.Now+in.TTL) {
			return l, false
		}
		l.Holder, l.Expires = in.Node, in.Now+in.TTL
		if out != nil {
			l.Token, l.Known, l.Issued = out.Token, true, out.Token
		} else {
			l.Token, l.Known, l.Issued = 0, false, l.Issued+1
		}
		// Lanes fence their ranges: every range still leased under an
		// older grant of the lane is taken back; the new holder gets it
		// through next, with a new token.
		for i, r := range l.Ranges {
			if r.State == lease.StateLeased {
				r.State = lease.StatePending
				l = l.withRange(i, r)
			}
		}
		return l, true

	case opNext:
		if !held {
			return l, answered(out, errLost)
		}
		h := l.head()
		if h < 0 || l.Ranges[h].State == lease.StateFailed {
			return l, answered(out, errNoWork) // a failed range blocks its lane
		}
		r := l.Ranges[h]
		if out != nil && (out.Err != errNone || out.Range != r.ID || out.Next != r.Next || out.Attempts != r.Attempts ||
			out.State != lease.StateLeased || out.Expires != in.Now+in.TTL) {
			return l, false
		}
		if r.State == lease.StateLeased && r.LaneToken == l.Token && r.Holder == in.Node {
			// The holder's own range, handed back with the same token.
			if out != nil {
				if r.Known && out.Token != r.Token || !r.Known && out.Token < r.Issued {
					return l, false
				}
				r.Token, r.Known, r.Issued = out.Token, true, out.Token
			}
			r.Expires = in.Now + in.TTL
			return l.withRange(h, r), true
		}
		if out != nil && out.Token <= r.Issued {
			return l, false
		}
		return l.withRange(h, r.leased(in.Node, out, in.Now+in.TTL, l.Token)), true

	case opHeartbeatLane:
		if !held {
			return l, answered(out, errLost)
		}
		if out != nil && (out.Err != errNone || out.Expires != in.Now+in.TTL) {
			return l, false
		}
		l.Expires = in.Now + in.TTL
		return l, true

	case opReleaseLane:
		if !held {
			return l, answered(out, errLost)
		}
		if !answered(out, errNone) {
			return l, false
		}
		for i, r := range l.Ranges {
			if r.State == lease.StateLeased && r.LaneToken == l.Token {
				r.State = lease.StatePending
				l = l.withRange(i, r)
			}
		}
		l.Holder = ""
		return l.normal(), true

	case opGrant:
		// A plain grant never leases an ordered group's range.
		return l, out == nil
	}
	// A range call on one of the lane's ranges.
	for i, r := range l.Ranges {
		if r.ID == in.Range {
			r, ok := m.rangeOp(r, in, out)
			if !ok {
				return l, false
			}
			return l.withRange(i, r), true
		}
	}
	return l, answered(out, errNotFound)
}

func linEqual(a, b any) bool {
	switch a := a.(type) {
	case nil:
		return b == nil
	case rangeState:
		b, ok := b.(rangeState)
		return ok && a == b
	case laneState:
		b, ok := b.(laneState)
		if !ok || a.Holder != b.Holder || a.Token != b.Token || a.Known != b.Known || a.Issued != b.Issued ||
			a.Expires != b.Expires || len(a.Ranges) != len(b.Ranges) {
			return false
		}
		for i := range a.Ranges {
			if a.Ranges[i] != b.Ranges[i] {
				return false
			}
		}
		return true
	}
	return false
}

func linHash(s any) uint64 {
	h := fnv.New64a()
	var b []byte
	putRange := func(r rangeState) {
		b = binary.LittleEndian.AppendUint64(b, uint64(r.ID))
		b = append(b, r.State...)
		b = binary.LittleEndian.AppendUint64(b, uint64(r.Next))
		b = binary.LittleEndian.AppendUint64(b, uint64(r.Attempts))
		b = append(b, r.Holder...)
		b = binary.LittleEndian.AppendUint64(b, uint64(r.Token))
		b = binary.LittleEndian.AppendUint64(b, uint64(r.Issued))
		b = binary.LittleEndian.AppendUint64(b, uint64(r.LaneToken))
		b = binary.LittleEndian.AppendUint64(b, uint64(r.Expires))
	}
	switch s := s.(type) {
	case rangeState:
		putRange(s)
	case laneState:
		b = append(b, s.Holder...)
		b = binary.LittleEndian.AppendUint64(b, uint64(s.Token))
		b = binary.LittleEndian.AppendUint64(b, uint64(s.Issued))
		b = binary.LittleEndian.AppendUint64(b, uint64(s.Expires))
		for _, r := range s.Ranges {
			putRange(r)
		}
	}
	h.Write(b)
	return h.Sum64()
}

// seconds shows a clock reading in seconds since the clock's start.
func seconds(us int64) string { return fmt.Sprintf("%.1fs", float64(us)/1e6) }

func describeOp(input, output any) string {
	in, out := input.(linInput), output.(linOutput)
	var call string
	switch in.Kind {
	case opGrant:
		call = fmt.Sprintf("%s grant", in.Node)
	case opGrantLane:
		call = fmt.Sprintf("%s grantLane", in.Node)
	case opNext, opHeartbeatLane, opReleaseLane:
		call = fmt.Sprintf("%s %s lane#%d", in.Node, in.Kind, in.Token)
	case opPut:
		call = fmt.Sprintf("%s put r%d#%d [%d,%d]", in.Node, in.Range, in.Token, in.From, in.To)
	case opCorrupt:
		call = fmt.Sprintf("%s corrupt r%d#%d at %d", in.Node, in.Range, in.Token, in.From)
	case opRetry:
		call = fmt.Sprintf("retry r%d", in.Range)
	default:
		call = fmt.Sprintf("%s %s r%d#%d", in.Node, in.Kind, in.Range, in.Token)
	}
	call += " @" + seconds(in.Now)
	switch {
	case out.Unknown:
		return call + " → ? (abandoned)"
	case out.Err != errNone:
		return call + " → " + string(out.Err)
	}
	switch in.Kind {
	case opGrant, opNext:
		return fmt.Sprintf("%s → r%d#%d next %d attempts %d until %s", call, out.Range, out.Token, out.Next, out.Attempts, seconds(out.Expires))
	case opGrantLane:
		return fmt.Sprintf("%s → lane#%d next %d until %s", call, out.Token, out.Next, seconds(out.Expires))
	case opHeartbeat, opHeartbeatLane:
		return fmt.Sprintf("%s → until %s", call, seconds(out.Expires))
	case opPut:
		if out.Dup {
			return fmt.Sprintf("%s → duplicate, next %d", call, out.Next)
		}
		return fmt.Sprintf("%s → next %d", call, out.Next)
	case opCorrupt:
		return fmt.Sprintf("%s → %s, attempts %d", call, out.State, out.Attempts)
	case opRetry:
		return fmt.Sprintf("%s → %d", call, out.N)
	}
	return call + " → ok"
}

func (r rangeState) String() string {
	s := fmt.Sprintf("r%d %s next %d", r.ID, r.State, r.Next)
	if r.Attempts > 0 {
		s += fmt.Sprintf(" attempts %d", r.Attempts)
	}
	if r.State == lease.StateLeased {
		tok := fmt.Sprint(r.Token)
		if !r.Known {
			tok = fmt.Sprintf("?>%d", r.Issued-1)
		}
		s += fmt.Sprintf(" %s#%s until %s", r.Holder, tok, seconds(r.Expires))
		if r.Ordered {
			s += fmt.Sprintf(" (lane#%d)", r.LaneToken)
		}
	}
	return s
}

func describeState(state any) string {
	switch s := state.(type) {
	case nil:
		return "initial"
	case rangeState:
		return s.String()
	case laneState:
		lane := "lane free"
		if s.Holder != "" {
			tok := fmt.Sprint(s.Token)
			if !s.Known {
				tok = fmt.Sprintf("?>%d", s.Issued-1)
			}
			lane = fmt.Sprintf("lane %s#%s until %s", s.Holder, tok, seconds(s.Expires))
		}
		parts := []string{lane}
		done := 0
		for _, r := range s.Ranges {
			if r.State == lease.StateDone {
				done++
				continue
			}
			if r.State != lease.StatePending || r.Next != r.Start || r.Attempts > 0 {
				parts = append(parts, r.String())
			}
		}
		return fmt.Sprintf("%s; %d done", strings.Join(parts, "; "), done)
	}
	return fmt.Sprint(state)
}

// partition splits a history by object: each unordered range is checked
// alone, the lane with its ranges. A plain grant belongs to the range it
// answered with; one whose answer is unknown may have leased any unordered
// range, so a copy of it goes to each. A grant that answered "no work"
// names no range and is checked by nothing here (which range a grant picks,
// and whether a free one was passed over, spans ranges; the conformance
// cases check it).
func (m *linModel) partition(history []porcupine.Operation) [][]porcupine.Operation {
	byObj := map[string][]porcupine.Operation{}
	var ranges []string
	for obj, s := range m.init {
		if _, ok := s.(rangeState); ok {
			ranges = append(ranges, obj)
		}
	}
	sort.Strings(ranges)
	for _, op := range history {
		in, out := op.Input.(linInput), op.Output.(linOutput)
		if in.Kind == opGrant && in.Obj == grantObj {
			switch {
			case out.Unknown:
				for _, obj := range ranges {
					c := op
					in.Obj = obj
					c.Input = in
					byObj[obj] = append(byObj[obj], c)
				}
				continue
			case out.Err != errNone:
				continue
			}
			in.Obj = m.objOf(out.Range)
			op.Input = in
		}
		byObj[in.Obj] = append(byObj[in.Obj], op)
	}
	keys := make([]string, 0, len(byObj))
	for k := range byObj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([][]porcupine.Operation, 0, len(keys))
	for _, k := range keys {
		out = append(out, byObj[k])
	}
	return out
}

// objOf names the partition that range id belongs to.
func (m *linModel) objOf(id int64) string {
	if obj, ok := m.objs[id]; ok {
		return obj
	}
	return fmt.Sprintf("r%d", id) // no such range: a partition of its own, whose state is missing
}

func laneObj(l lease.Lane) string { return "lane:" + string(l) }

// grantObj marks a plain grant not yet given to a partition: its answer
// names the range.
const grantObj = "grant"

func (m *linModel) porcupine() porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition:         m.partition,
		Init:              func() []any { return []any{nil} },
		Step:              m.step,
		Equal:             linEqual,
		Hash:              linHash,
		DescribeOperation: describeOp,
		DescribeState:     describeState,
	}
	return nm.ToModel()
}
