// Package webhooks owns threshold webhooks: which thresholds a change of a
// counter crosses (a pure rule, crossings.go), the events such crossings
// send and how they are delivered (signing, the retry schedule, the check
// of the address being dialled: relay.go), and rate and silence alerts:
// when a counter's sum over a window starts or stops being above or below
// a number (alert.go), found by an evaluator that reads history
// (alerts.go). It knows no SQL and serves no HTTP: storage/ keeps the
// hooks, the alerts' state and the outbox, and finds the crossings inside
// each change's transaction, app/ serves the API, keys/ says who may touch
// which hook.
package webhooks

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/countersvc/countersvc/counters"
)

// Direction is which way a counter must move through a threshold.
type Direction string

// The directions. Up is previous < T <= value, Down previous > T >= value.
const (
	Up   Direction = "up"
	Down Direction = "down"
	Both Direction = "both"
)

// Hook is a registered webhook. Secret is shown only by Create and Rotate.
type Hook struct {
	ID int64
	// Owner is the API key that created the hook (0: the admin token); it
	// counts against that key's limit.
	Owner int64
	URL   string
	// Target is a counter name, or with IsPrefix every counter whose name
	// starts with it.
	Target     string
	IsPrefix   bool
	Thresholds []int64 // sorted, without repeats
	Every      int64   // 0: none
	Direction  Direction
	CreatedAt  time.Time
	DisabledAt *time.Time // set on 410 or after days of continuous failure
	Secret     string     // "whsec_" + base64; the relay signs with it
	// PreviousUntil is, in Rotate's answer, until when the secret it
	// replaced signs too (nil elsewhere). The previous secret itself never
	// leaves the store but for the relay.
	PreviousUntil *time.Time
	// Alert makes the hook a rate or silence alert (see alert.go), which
	// has no thresholds; nil for a threshold hook.
	Alert *Alert
}

// Covers reports whether the hook watches the counter name.
func (h *Hook) Covers(name string) bool {
	if h.IsPrefix {
		return strings.HasPrefix(name, h.Target)
	}
	return name == h.Target
}

// CreateRequest is a new hook's settings, as a client sends them.
type CreateRequest struct {
	URL        string
	Name       string // exactly one of Name and Prefix
	Prefix     string
	Thresholds []int64
	Every      int64
	Direction  Direction // "": Up
	// Window and one of Above and Below make an alert instead, without
	// Thresholds, Every and Direction.
	Window       string
	Above, Below *int64
	Owner        int64 // set by the key guard, never by the client
}

// Limits of a hook.
const (
	MaxThresholds = 100
	MaxURLLen     = 2048
	// MaxCrossings bounds the events one change sends one hook: a set from
	// 0 to 10^12 of a hook with every 1 would otherwise record 10^12. The
	// first MaxCrossings in the direction of travel are sent.
	MaxCrossings = 100
)

// Validate checks a request and returns the hook it describes, without
// its id, owner or secret. The URL's addresses are checked by Guard.
func (r CreateRequest) Validate() (*Hook, error) {
	h := &Hook{URL: r.URL, Every: r.Every, Direction: r.Direction, Owner: r.Owner}
	switch {
	case r.Name != "" && r.Prefix != "":
		return nil, counters.Errorf(counters.EINVALID, "Give either \"name\" or \"prefix\", not both.")
	case r.Name != "":
		if err := counters.ValidateName(r.Name); err != nil {
			return nil, err
		}
		h.Target = r.Name
	case r.Prefix != "":
		if counters.ValidateName(r.Prefix) != nil { // a prefix is the start of a name
			return nil, counters.Errorf(counters.EINVALID, "\"prefix\" must be 1 to 255 bytes of UTF-8 without control characters.")
		}
		h.Target, h.IsPrefix = r.Prefix, true
	default:
		return nil, counters.Errorf(counters.EINVALID, "Give the counter's \"name\", or a non-empty \"prefix\" of the counters to watch.")
	}
	if err := validateURL(r.URL); err != nil {
		return nil, err
	}
	if r.Window != "" || r.Above != nil || r.Below != nil {
		return h, r.validateAlert(h)
	}
	if len(r.Thresholds) == 0 && r.Every == 0 {
		return nil, counters.Errorf(counters.EINVALID, "Give \"thresholds\", \"every\" or both; or, for an alert, a \"window\" with \"above\" or \"below\".")
	}
	if len(r.Thresholds) > MaxThresholds {
		return nil, counters.Errorf(counters.EINVALID, "At most %d \"thresholds\".", MaxThresholds)
	}
	if r.Every < 0 {
		return nil, counters.Errorf(counters.EINVALID, "\"every\" must be a positive integer.")
	}
	h.Thresholds = slices.Compact(slices.Sorted(slices.Values(r.Thresholds)))
	switch r.Direction {
	case "":
		h.Direction = Up
	case Up, Down, Both:
	default:
		return nil, counters.Errorf(counters.EINVALID, "\"direction\" must be \"up\", \"down\" or \"both\".")
	}
	return h, nil
}

// validateAlert checks an alert's settings and sets them on h.
func (r CreateRequest) validateAlert(h *Hook) error {
	switch {
	case r.Thresholds != nil || r.Every != 0 || r.Direction != "":
		return counters.Errorf(counters.EINVALID, "An alert (\"window\" with \"above\" or \"below\") takes no \"thresholds\", \"every\" or \"direction\"; make a threshold hook of its own for those.")
	case r.Window == "":
		return counters.Errorf(counters.EINVALID, "Give the alert's \"window\", from 5m to 7d, with \"above\" or \"below\".")
	case (r.Above == nil) == (r.Below == nil):
		return counters.Errorf(counters.EINVALID, "Give exactly one of \"above\" and \"below\" with the \"window\".")
	}
	window, err := ParseWindow(r.Window)
	if err != nil {
		return err
	}
	a := &Alert{Window: window, Above: r.Above != nil}
	if a.Above {
		a.N = *r.Above
	} else {
		a.N = *r.Below
	}
	if a.N < 1 {
		return counters.Errorf(counters.EINVALID, "\"above\" and \"below\" must be positive integers (the sum of the steps counted over the window).")
	}
	h.Alert, h.Direction = a, ""
	return nil
}

// validateURL accepts absolute http and https URLs without credentials.
func validateURL(raw string) error {
	if raw == "" || len(raw) > MaxURLLen {
		return counters.Errorf(counters.EINVALID, "\"url\" must be an http or https URL of at most %d bytes.", MaxURLLen)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "":
		return counters.Errorf(counters.EINVALID, "\"url\" must be an absolute http or https URL.")
	case u.User != nil:
		// Credentials in a URL end up in logs and listings.
		return counters.Errorf(counters.EINVALID, "\"url\" must not carry credentials; verify the signature instead.")
	case u.Fragment != "":
		return counters.Errorf(counters.EINVALID, "\"url\" must not have a fragment.")
	}
	return nil
}

// SecretPrefix starts every hook's secret, as Standard Webhooks has it.
const SecretPrefix = "whsec_"

// secretBytes is the randomness of a secret: 256 bits (the convention asks
// for 24 to 64 bytes).
const secretBytes = 32

// newSecret returns a fresh signing secret.
func newSecret() string {
	b := make([]byte, secretBytes)
	rand.Read(b) // never fails (crypto/rand, Go 1.24+)
	return SecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// secretKey is the HMAC key of a secret: the bytes after the prefix.
func secretKey(secret string) ([]byte, error) {
	return base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, SecretPrefix))
}

// RotationGrace is how long the secret a rotation replaced keeps signing
// the calls, beside the new one: the usual day (Svix's), for the owner to
// deploy the new secret to every receiver. Rotating again within it drops
// the oldest: a hook signs with at most two secrets, the newest and the
// one it replaced.
const RotationGrace = 24 * time.Hour

// Secrets are the secrets a hook may sign with.
type Secrets struct {
	Current string
	// Previous is the secret the last rotation replaced ("" when none),
	// which signs calls made before PreviousUntil.
	Previous      string
	PreviousUntil time.Time
}

// Active returns the secrets that sign a call made at t, newest first.
func (s Secrets) Active(t time.Time) []string {
	if s.Previous != "" && t.Before(s.PreviousUntil) {
		return []string{s.Current, s.Previous}
	}
	return []string{s.Current}
}

// Delivery is one event of a hook and how its delivery stands.
type Delivery struct {
	ID             string // the webhook-id header
	Status         Status
	Attempts       int
	LastStatusCode *int       // nil before the first answer
	NextAttemptAt  *time.Time // nil once delivered or failed
	Event          []byte     // the body, exactly as sent
	CreatedAt      time.Time
}

// Status is where a delivery stands.
type Status string

// The statuses of a delivery.
const (
	Pending   Status = "pending"
	Delivered Status = "delivered"
	Failed    Status = "failed"
)

// API is what the HTTP layer may do with hooks; keys.Service.Webhooks
// guards it.
type API interface {
	// Create registers a hook and returns it with its secret, the only
	// time the secret is shown. Returns EINVALID for a bad request or a
	// refused URL, EOUTOFRANGE when the owner has its limit of hooks.
	Create(ctx context.Context, req CreateRequest) (*Hook, error)
	// Get returns ENOTFOUND if the hook does not exist.
	Get(ctx context.Context, id int64) (*Hook, error)
	List(ctx context.Context) ([]Hook, error)
	// Delete removes the hook and its pending deliveries; ENOTFOUND.
	Delete(ctx context.Context, id int64) error
	// Enable clears DisabledAt and makes its pending deliveries due now.
	Enable(ctx context.Context, id int64) (*Hook, error)
	// Rotate gives the hook a new secret and returns the hook with it, the
	// only time it is shown; the secret it replaces signs too for
	// RotationGrace (PreviousUntil). ENOTFOUND.
	Rotate(ctx context.Context, id int64) (*Hook, error)
	// Deliveries lists the hook's newest deliveries first; ENOTFOUND.
	Deliveries(ctx context.Context, id int64, limit int) ([]Delivery, error)
}
