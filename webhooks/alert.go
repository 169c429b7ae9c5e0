package webhooks

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/countersvc/countersvc/counters"
)

// Alert is a rate or silence alert's settings and where it stands: a hook
// with an Alert calls when the sum of its counter's (or prefix's) counted
// steps over the last Window starts or stops being Above N (sum >= N) or
// below it (sum < N; below 1 is silence). It has no thresholds.
//
// History keeps steps per quarter hour (counters.HistoryGrain), so a
// window is summed over whole quarter hours: every quarter hour the last
// Window touches, from the start of the one that holds now - Window to
// now (the window widened by less than a quarter hour, as history widens
// a range to whole periods), and never from before the hook's creation
// (Since): the steps of its creation's quarter hour that came before it
// (Baseline) are taken off. See Span.
type Alert struct {
	Window time.Duration
	Above  bool // true: sum >= N holds; false: sum < N holds
	N      int64
	// Since is when the hook started watching (its creation), and Baseline
	// the steps its quarter hour held by then.
	Since    time.Time
	Baseline int64
	// Holds is the condition as last recorded (an alert.started sent and
	// no alert.ended since), and Seq counts the transitions recorded: the
	// store moves the state only from the Seq its reader saw, so that of
	// processes evaluating at once one records each transition.
	Holds bool
	Seq   int64
}

// The bounds of a window.
const (
	MinWindow = 5 * time.Minute
	MaxWindow = 7 * 24 * time.Hour
)

// grain is history's finest period, the quarter hour.
const grain = counters.HistoryGrain

// ParseWindow reads a window: a Go duration ("90m", "1h30m") of whole
// seconds or a whole number of days ("2d"), from MinWindow to MaxWindow.
func ParseWindow(s string) (time.Duration, error) {
	bad := counters.Errorf(counters.EINVALID,
		"\"window\" must be from 5m to 7d: a Go duration such as \"90m\" or \"1h30m\", or a number of days such as \"2d\".")
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 1 || n > 7 || days != strconv.Itoa(n) {
			return 0, bad
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, bad
		}
	}
	if d < MinWindow || d > MaxWindow || d%time.Second != 0 {
		return 0, bad
	}
	return d, nil
}

// FormatWindow writes a window as ParseWindow reads it: whole days as
// "2d", others as a Go duration without its zero units ("1h30m", "36h");
// ParseWindow's are whole seconds.
func FormatWindow(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return strconv.Itoa(int(d/(24*time.Hour))) + "d"
	}
	var b strings.Builder
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}} {
		if n := d / u.d; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.name)
			d -= n * u.d
		}
	}
	return b.String()
}

// Span is what the alert sums at now: the quarter hours from the one that
// holds from up to the one that holds now, with from the start of the
// quarter hour that holds now - Window, or Since when that is later (then
// the Baseline is taken off the first quarter hour). full says whether a
// whole window has passed since the hook's creation: a below alert holds
// only then, so that a new hook on a quiet counter starts its silence
// when it has watched a whole window of it.
func (a *Alert) Span(now time.Time) (from time.Time, full bool) {
	start := now.Add(-a.Window)
	full = !start.Before(a.Since)
	from = start.UTC().Truncate(grain) // UTC quarters: Truncate counts from the zero time, a UTC midnight
	if from.Before(a.Since) {
		from = a.Since
	}
	return from, full
}

// HoldsAt is the condition for a window's sum.
func (a *Alert) HoldsAt(sum int64, full bool) bool {
	if a.Above {
		return sum >= a.N
	}
	return full && sum < a.N
}

// The types of an alert's events.
const (
	AlertStarted = "alert.started"
	AlertEnded   = "alert.ended"
)

// Transition is the event the alert sends when its condition is found to
// be holds ("" when it stays as it was).
func (a *Alert) Transition(holds bool) string {
	switch {
	case holds && !a.Holds:
		return AlertStarted
	case !holds && a.Holds:
		return AlertEnded
	}
	return ""
}

// AlertEvent is the body of an alert's call.
type AlertEvent struct {
	Type      string         `json:"type"`
	Timestamp time.Time      `json:"timestamp"`
	Data      AlertEventData `json:"data"`
}

// AlertEventData says which window held what: from and to are the period
// summed (see Alert.Span), to the moment of the evaluation.
type AlertEventData struct {
	Name   string    `json:"name,omitempty"`
	Prefix string    `json:"prefix,omitempty"`
	Window string    `json:"window"`
	Above  *int64    `json:"above,omitempty"`
	Below  *int64    `json:"below,omitempty"`
	Sum    int64     `json:"sum"`
	From   time.Time `json:"from"`
	To     time.Time `json:"to"`
}

// AlertBody is the event of type typ of hook h, whose window [from, to]
// summed sum, as the bytes to store and sign.
func AlertBody(h *Hook, typ string, sum int64, from, to time.Time) []byte {
	a := h.Alert
	d := AlertEventData{Window: FormatWindow(a.Window), Sum: sum, From: from.UTC(), To: to.UTC()}
	if h.IsPrefix {
		d.Prefix = h.Target
	} else {
		d.Name = h.Target
	}
	n := a.N
	if a.Above {
		d.Above = &n
	} else {
		d.Below = &n
	}
	b, _ := json.Marshal(AlertEvent{Type: typ, Timestamp: to.UTC(), Data: d}) // strings, ints and times always marshal
	return b
}
