package s3

import (
	"context"
	"io"
	"slices"
	"sort"
	"sync"

	"lukechampine.com/blake3/guts"

	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

// Variables for the tests (export_test.go).
var (
	// planWindow is how many planned data ranges a Store keeps requested
	// ahead of the reader: their GETs are sent and their responses wait,
	// unread, until the reader's Slice takes them.
	planWindow = 8

	// planOutboardMax bounds the outboard bytes one plan fetches and
	// keeps (the outboard of a 4 GB object); a plan that needs more
	// fetches none (its slices fetch their own pairs, as without a plan).
	planOutboardMax uint64 = 16 << 20

	// planOutboardTotal bounds the outboard bytes all the plans of a Store
	// hold at once; a plan that would exceed it fetches none.
	planOutboardTotal uint64 = 32 << 20

	// planOff has Plan do nothing, for the tests' figures.
	planOff = false
)

const (
	// planMax bounds the plans a Store keeps at once: a new plan ends the
	// oldest.
	planMax = 16

	// planGetsMax bounds the outboard GETs of one plan in flight at once.
	planGetsMax = 8
)

// Plan implements verify.Planner: ranges are the ranges of object id a
// reader is about to read, in order (a scan's, from package reader). It
// returns at once, and changes which requests Slice makes, never what it
// returns: everything fetched ahead still reaches the reader only through
// Slice, and verify checks it there against the storage_id (Section
// 11.10). What a plan starts ends when ctx is done. Plan does nothing for
// an object whose size the Store has not learnt (a reader learns it when
// it opens the object).
//
// The outboard: if it is larger than the Store's whole-outboard limit
// (WithWholeOutboard, 256 KiB by default; smaller ones are fetched whole
// by the first slice and kept), the plan fetches, in as few
// GETs as the byte bound of issue 18 allows, the parent pairs every
// planned range needs that the Store does not keep already: the union of
// their runs, merged through the smallest gaps while pairs and gaps stay
// within 3/4 of the slack the bound leaves the ranges (planRuns), or the
// whole outboard when it fits that slack. The pairs are kept
// with the plan only if every one of them the ranges can use chains to the
// storage_id (chainedAll), so a wrong pair from the server is never used
// in place of a fresh fetch; a slice whose pairs the plan holds makes no
// outboard request. A plan holds at most 16 MiB of pairs (the outboard of
// a 4 GB object), the plans of a Store 32 MiB in all, and a Store keeps
// its 16 newest plans; beyond that a plan fetches no pairs ahead.
//
// The data: the plan keeps the next planWindow planned ranges requested
// (one GET of .data each, as Slice would make), so that a scan has that
// many requests in flight. A response waits unread until its Slice takes
// it: the bytes ahead are held by the connection's flow control (its
// socket buffers), not in the Store's memory.
func (s *Store) Plan(ctx context.Context, id storageid.ID, ranges []verify.Range) {
	size, ok := s.knownSize(id)
	if planOff || !ok || size == 0 || size > 1<<63-1 || len(ranges) == 0 || ctx.Err() != nil {
		return
	}
	p := &plan{s: s, ctx: ctx, key: obKey{id, size}, ahead: make(map[span]*prefetch), obDone: make(chan struct{}), gone: make(chan struct{})}
	var (
		groups []span // [g0, g1) of each range, in order
		slack  uint64 // what the ranges' groups leave of 2 groups a range
	)
	for _, r := range ranges {
		if r.N == 0 {
			continue
		}
		g0, g1 := selectGroups(size, r.Off, r.N)
		start, end := g0*verify.GroupSize, min(g1*verify.GroupSize, size)
		d := span{start, end - start}
		if k := len(p.data); k > 0 && p.data[k-1] == d {
			continue
		}
		p.data = append(p.data, d)
		groups = append(groups, span{g0, g1 - g0})
		if n := min(r.N, size-min(r.Off, size)); 2*verify.GroupSize+n > d.n {
			slack += 2*verify.GroupSize + n - d.n
		}
	}
	s.plans.add(p)
	context.AfterFunc(ctx, func() { s.plans.end(p) })

	obSize := verify.OutboardSize(size)
	if obSize <= s.wholeOb {
		close(p.obDone)
	} else {
		runs := planRuns(size, obSize, groups, slack, func(r span) bool {
			missing, _ := s.pairs.lookup(p.key, []span{r}, 0)
			return len(missing) == 0
		})
		var n uint64
		for _, r := range runs {
			n += r.n
		}
		if !s.plans.reserve(p, n) {
			runs = nil // the Store holds enough plans' pairs already
		}
		go p.fetchOutboard(runs, obSize)
	}
	p.mu.Lock()
	p.fill()
	p.mu.Unlock()
}

// planRuns returns the runs of the outboard a plan fetches for the groups
// (each span a [g0, g0+n) of groups) of a blob of size bytes: the union of
// the pairs they need, merged through the smallest gaps while the bytes of
// pairs and gaps stay within 3/4 of slack, or the whole outboard if it
// fits slack; kept, if not nil, reports
// the runs whose pairs the Store keeps already (pairCache), which are not
// fetched. slack is what the bound of
// issue 18 leaves the outboard: 2 groups a range beyond the range's bytes,
// less the bytes its groups' rounding adds (Plan computes it). The
// quarter left is for the slices the plan does not hold (a reader's open:
// with all of slack spent, a one-column projection of a 1 GB object
// fetched 0.03 % more than the bound). It returns nil if that is more
// than planOutboardMax.
func planRuns(size, obSize uint64, groups []span, slack uint64, kept func(span) bool) []span {
	var all []span
	for _, g := range groups {
		all = append(all, neededPairs(size, g.off, g.off+g.n)...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].off < all[j].off })
	runs := coalesce(all, 0)
	var needed uint64
	for _, r := range runs {
		needed += r.n
	}
	if needed == 0 {
		return nil
	}
	if obSize <= slack {
		if obSize > planOutboardMax {
			return nil
		}
		return []span{{0, obSize}}
	}
	// Merge through the smallest gaps first, within a budget of needed
	// bytes of gaps.
	type gap struct {
		i int // between runs[i] and runs[i+1]
		n uint64
	}
	gaps := make([]gap, 0, len(runs))
	for i := 0; i+1 < len(runs); i++ {
		gaps = append(gaps, gap{i, runs[i+1].off - (runs[i].off + runs[i].n)})
	}
	sort.Slice(gaps, func(a, b int) bool { return gaps[a].n < gaps[b].n })
	merge := make([]bool, len(runs))
	budget := slack/4*3 - min(slack/4*3, needed)
	for _, g := range gaps {
		if g.n > budget {
			break
		}
		budget -= g.n
		merge[g.i] = true
	}
	var out []span
	var total uint64
	for i, r := range runs {
		if k := len(out); k > 0 && merge[i-1] {
			out[k-1].n = r.off + r.n - out[k-1].off
		} else {
			out = append(out, r)
		}
	}
	// Runs whose every pair the Store keeps are not fetched; the others
	// are fetched whole (striking the kept pairs inside a run would split
	// it into many GETs: the kept pairs are those of ranges' ends, strewn
	// through it).
	if kept != nil {
		out = slices.DeleteFunc(out, kept)
	}
	for _, r := range out {
		total += r.n
	}
	if total > planOutboardMax {
		return nil
	}
	return out
}

// plans are the plans of a Store, oldest first.
type plans struct {
	mu      sync.Mutex
	list    []*plan
	obBytes uint64 // the outboard bytes reserved by the plans in list
}

// reserve counts n outboard bytes for p, and reports false, counting
// nothing, if that would make the plans' more than planOutboardTotal.
func (ps *plans) reserve(p *plan, n uint64) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.obBytes+n > planOutboardTotal || !slices.Contains(ps.list, p) {
		return false
	}
	ps.obBytes += n
	p.obReserved = n
	return true
}

// A plan is the work Plan started for one reader's ranges.
type plan struct {
	s    *Store
	ctx  context.Context // the reader's: the plan's requests end with it
	key  obKey
	gone chan struct{} // closed when the plan ends

	obDone     chan struct{} // closed once ob is final
	ob         []segment     // pairs that chain to the storage_id, by offset; nil if none
	obReserved uint64        // bytes counted in plans.obBytes (under plans.mu)

	mu    sync.Mutex
	data  []span // the planned data ranges, in order
	next  int    // data[next:] are not requested yet
	ahead map[span]*prefetch
	ended bool
}

// A prefetch is a planned GET of .data: done is closed once body or err
// is set.
type prefetch struct {
	done chan struct{}
	body io.ReadCloser
	err  error
}

func (ps *plans) add(p *plan) {
	ps.mu.Lock()
	ps.list = append(ps.list, p)
	var old *plan
	if len(ps.list) > planMax {
		old = ps.list[0]
	}
	ps.mu.Unlock()
	if old != nil {
		ps.end(old) // its slices taken go on: they run under their reader's ctx
	}
}

// end removes p and closes the responses nobody took.
func (ps *plans) end(p *plan) {
	ps.mu.Lock()
	if i := slices.Index(ps.list, p); i >= 0 {
		ps.list = slices.Delete(ps.list, i, i+1)
		ps.obBytes -= p.obReserved
	}
	ps.mu.Unlock()
	p.mu.Lock()
	if p.ended {
		p.mu.Unlock()
		return
	}
	p.ended = true
	close(p.gone)
	ahead := p.ahead
	p.ahead = nil
	p.mu.Unlock()
	for _, pf := range ahead {
		go func() {
			<-pf.done
			if pf.body != nil {
				pf.body.Close()
			}
		}()
	}
}

// find returns the newest plan for k, or nil.
func (ps *plans) find(k obKey) *plan {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for i := len(ps.list) - 1; i >= 0; i-- {
		if ps.list[i].key == k {
			return ps.list[i]
		}
	}
	return nil
}

// forget ends the plans of id.
func (ps *plans) forget(id storageid.ID) {
	ps.mu.Lock()
	var end []*plan
	for _, p := range ps.list {
		if p.key.id == id {
			end = append(end, p)
		}
	}
	ps.mu.Unlock()
	for _, p := range end {
		ps.end(p)
	}
}

// fill requests planned ranges until planWindow are ahead (under p.mu).
func (p *plan) fill() {
	for !p.ended && p.next < len(p.data) && len(p.ahead) < planWindow {
		d := p.data[p.next]
		p.next++
		if _, ok := p.ahead[d]; ok {
			continue
		}
		pf := &prefetch{done: make(chan struct{})}
		p.ahead[d] = pf
		go func() {
			defer close(pf.done)
			pf.body, pf.err = p.s.getRange(p.ctx, p.s.dataKey(p.key.id), d.off, d.n, p.key.size)
		}()
	}
}

// take returns the planned GET of data range d, if one was sent, and
// sends the next; a planned range not sent yet is struck from the plan,
// since its Slice makes its own request.
func (p *plan) take(d span) *prefetch {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return nil
	}
	pf := p.ahead[d]
	if pf != nil {
		delete(p.ahead, d)
	} else if j := slices.Index(p.data[p.next:min(len(p.data), p.next+4*planWindow)], d); j >= 0 {
		p.data = slices.Delete(p.data, p.next+j, p.next+j+1)
	}
	p.fill()
	return pf
}

// pairs returns, once the plan's outboard is fetched, the segments of the
// plan's pairs that lie in runs (whole pairs, in increasing order), and
// the parts of runs the plan does not hold. ok is false if ctx ended
// first.
func (p *plan) pairs(ctx context.Context, runs []span) (segs []segment, missing []span, ok bool) {
	select {
	case <-p.obDone:
	case <-ctx.Done():
		return nil, nil, false
	case <-p.gone:
		return nil, runs, true
	}
	for _, r := range runs {
		off, end := r.off, r.off+r.n
		i := max(0, sort.Search(len(p.ob), func(i int) bool { return p.ob[i].off > off })-1)
		for ; off < end && i < len(p.ob); i++ {
			sg := p.ob[i]
			sgEnd := sg.off + uint64(len(sg.b))
			if sgEnd <= off {
				continue
			}
			if sg.off >= end {
				break
			}
			if sg.off > off {
				missing = appendSpan(missing, span{off, sg.off - off})
				off = sg.off
			}
			hi := min(end, sgEnd)
			b := sg.b[off-sg.off : hi-sg.off]
			if k := len(segs); k > 0 && segs[k-1].off+uint64(len(segs[k-1].b)) == off {
				segs[k-1].b = append(slices.Clip(segs[k-1].b), b...)
			} else {
				segs = append(segs, segment{off, b})
			}
			off = hi
		}
		if off < end {
			missing = appendSpan(missing, span{off, end - off})
		}
	}
	return segs, missing, true
}

// appendSpan appends r to runs, merged with the last if they touch.
func appendSpan(runs []span, r span) []span {
	if k := len(runs); k > 0 && runs[k-1].off+runs[k-1].n == r.off {
		runs[k-1].n += r.n
		return runs
	}
	return append(runs, r)
}

// fetchOutboard fetches runs, checks that the pairs chain to the
// storage_id, and keeps them; p.ob stays nil if anything fails.
func (p *plan) fetchOutboard(runs []span, obSize uint64) {
	defer close(p.obDone)
	if len(runs) == 0 {
		return
	}
	segs := make([]segment, len(runs))
	var (
		wg  sync.WaitGroup
		bad sync.Once
		ok  = true
		sem = make(chan struct{}, planGetsMax)
	)
	for i, r := range runs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			body, err := p.s.getRange(p.ctx, p.s.outboardKey(p.key.id), r.off, r.n, obSize)
			var b []byte
			if err == nil {
				b, err = io.ReadAll(io.LimitReader(body, int64(r.n)))
				body.Close()
			}
			if err != nil || uint64(len(b)) != r.n {
				bad.Do(func() { ok = false })
				return
			}
			segs[i] = segment{r.off, b}
		})
	}
	wg.Wait()
	if !ok || !chainedAll(p.key.id, p.key.size, &sparse{segs: segs}) {
		return
	}
	p.ob = segs
}

// chainedAll reports whether every pair in ob that the tree of a blob of
// size bytes whose root is id reaches through pairs in ob chains to id:
// the root pair hashes, as the root, to id, and every other pair to the
// chaining value its parent's pair holds for it. Pairs whose parent is not
// in ob are not reached; no slice can use them, since a slice needs the
// pairs of every node on its paths from the root.
func chainedAll(id storageid.ID, size uint64, ob *sparse) bool {
	type frame struct {
		length, obOff uint64
		want          [8]uint32
		flags         uint32
	}
	var pair [pairSize]byte
	stack := []frame{{size, 0, cvOf(id[:]), guts.FlagRoot}}
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if f.length <= verify.GroupSize {
			continue
		}
		if n, _ := ob.ReadAt(pair[:], int64(f.obOff)); n != pairSize {
			continue // not fetched: nothing below it can be used
		}
		l, r := cvOf(pair[:32]), cvOf(pair[32:])
		if guts.ChainingValue(guts.ParentNode(l, r, &guts.IV, f.flags)) != f.want {
			return false
		}
		mid := split(f.length)
		stack = append(stack,
			frame{f.length - mid, f.obOff + pairSize*(mid/verify.GroupSize), r, 0},
			frame{mid, f.obOff + pairSize, l, 0})
	}
	return true
}
