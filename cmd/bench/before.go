package main

import "fmt"

// The before scenario: the increment path and page hits (limits and
// visitors on, distinct visitors) against the code of -before-commit (by
// default the turn before history, API keys and the cache lease landed) (scripts/bench builds
// that commit from a git worktree and serves it as the instance "before",
// on a database and a Redis database of its own). The two alternate within
// one run, so that a busy neighbour or MySQL's purge weighs on both alike.

// beforeTarget is how fast the increment path must stay against that code.
const beforeTarget = 0.9

type beforeResult struct {
	commit                                 string
	hot, hotBefore, uniform, uniformBefore load
	hits, hitsBefore                       load
}

func (b *bench) before() error {
	old := *b.urls["before"]
	uniform := uniformScript("POST", uniformPrefix, "/increment", uniformCounters)
	ms := []measure{
		b.wrk("hot counter", b.url+hotPath, targetConns, postScript),
		b.wrk("hot counter, "+b.beforeCommit, old+hotPath, targetConns, postScript),
		b.wrk("1,000 counters", b.url, targetConns, uniform),
		b.wrk("1,000 counters, "+b.beforeCommit, old, targetConns, uniform),
		b.wrk("page hits", b.url+hitsPath, targetConns, visitorsScript),
		b.wrk("page hits, "+b.beforeCommit, old+hitsPath, targetConns, visitorsScript),
	}
	if err := b.warm(ms...); err != nil {
		return err
	}
	rs, err := b.compare(ms...)
	if err != nil {
		return err
	}
	b.r.before = &beforeResult{commit: b.beforeCommit,
		hot: rs[0].byRPS(), hotBefore: rs[1].byRPS(), uniform: rs[2].byRPS(), uniformBefore: rs[3].byRPS(),
		hits: rs[4].byRPS(), hitsBefore: rs[5].byRPS()}
	return nil
}

// beforeRow is one load of the comparison, now and before.
type beforeRow struct {
	name     string
	now, old load
}

func (r *beforeResult) rows() []beforeRow {
	return []beforeRow{
		{fmt.Sprintf("hot counter, %d conns", targetConns), r.hot, r.hotBefore},
		{fmt.Sprintf("1,000 counters, %d conns", targetConns), r.uniform, r.uniformBefore},
		{fmt.Sprintf("page hits, limits and visitors on, %d conns", targetConns), r.hits, r.hitsBefore},
	}
}
