package hits

import (
	"context"
	"time"
)

// Limits are the abuse limits of the hit endpoints, the per-client rate
// limit and the repeat check, kept where every process of the service
// shares them. Both are checked in one call, because a page hit should cost
// its limits one round trip, not one per limit.
type Limits interface {
	// Checks reports whether Admit checks anything for a hit of a known
	// image proxy (proxy) or of any other client: when it does not, the
	// hit is not identified for the limits, nor sent to them.
	Checks(proxy bool) bool
	// Admit takes one hit from the budget of h.Client. If the budget is
	// spent it returns how long the client must wait, and nothing else
	// happens. Otherwise it returns what it knows of h.Visitor's earlier
	// hit on h.Name within the repeat window, and marks this hit if there
	// was none; two processes that see the same hit at once get one None
	// between them. An error means neither limit could be checked; callers
	// then count the hit.
	Admit(ctx context.Context, h Hit) (retryAfter time.Duration, earlier Earlier, err error)
	// Created records that h, admitted with None, was counted and created
	// its counter.
	Created(ctx context.Context, h Hit) error
	// Forget undoes Admit's mark of a hit that could not be counted, so
	// that the visitor's retry counts.
	Forget(ctx context.Context, h Hit) error
}

// Hit names who a hit is from, in the units of the limits, by identifiers
// of the day (visitors.Keys): the limits keep them, never an address.
type Hit struct {
	Client  string // whose budget it takes: an address or an IPv6 /64 (see rateKey)
	Visitor string // whose repeat it may be: the visitor (address and User-Agent) on Name
	Name    string // the counter
	// Proxy: a known image proxy's hit, on a budget of its own per proxy
	// address and counter (Client says both), and never a repeat.
	Proxy bool
	// Chain, when set, is the hit's increment. Admit may start it (see
	// Chain.Start) when it admits the hit as a first, instead of
	// answering then: it then answers None once the increment is
	// answered, which Chain.Done says too.
	Chain *Chain
}

// Earlier is what the limits know of a visitor's earlier hit on a name
// within the repeat window.
type Earlier int

const (
	// None: no earlier hit; this one counts.
	None Earlier = iota
	// Pending: an earlier hit, whose count may not have committed yet.
	Pending
	// Created: an earlier hit that was counted and created the counter.
	Created
)
