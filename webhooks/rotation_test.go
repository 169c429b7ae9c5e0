package webhooks_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/countersvc/countersvc/webhooks"
)

// The secret a rotation replaced signs until its grace ends, and not at
// that instant or after; a hook never rotated signs with its one secret.
func TestThePreviousSecretIsActiveUntilItsGraceEnds(t *testing.T) {
	until := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	rotated := webhooks.Secrets{Current: "whsec_new", Previous: "whsec_old", PreviousUntil: until}
	tests := []struct {
		name    string
		secrets webhooks.Secrets
		at      time.Time
		want    []string
	}{
		{"never rotated", webhooks.Secrets{Current: "whsec_new"}, until.Add(-time.Hour), []string{"whsec_new"}},
		{"just after the rotation", rotated, until.Add(-webhooks.RotationGrace), []string{"whsec_new", "whsec_old"}},
		{"a microsecond before the grace ends", rotated, until.Add(-time.Microsecond), []string{"whsec_new", "whsec_old"}},
		{"when the grace ends", rotated, until, []string{"whsec_new"}},
		{"after the grace", rotated, until.Add(time.Hour), []string{"whsec_new"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.secrets.Active(tc.at); strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Fatalf("Active = %q, want %q", got, tc.want)
			}
		})
	}
}

// A call signed with two secrets carries one signature each, separated by
// a space, and the Standard Webhooks library verifies it with either
// secret and with no other.
func TestACallSignedWithTwoSecretsVerifiesWithEither(t *testing.T) {
	const (
		newer = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw3W1m8yTeYxw="
		older = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"
		other = "whsec_T1RIRVJzQlFJaHJzY0NobFFJTVYrYjVz"
	)
	body := []byte(`{"type":"counter.threshold"}`)
	now := time.Now()
	sig, err := webhooks.Sign([]string{newer, older}, "msg_1", now, body)
	if err != nil {
		t.Fatal(err)
	}
	if parts := strings.Split(sig, " "); len(parts) != 2 || !strings.HasPrefix(parts[0], "v1,") || !strings.HasPrefix(parts[1], "v1,") {
		t.Fatalf("webhook-signature %q, want two v1 signatures separated by a space", sig)
	}
	header := http.Header{}
	header.Set("webhook-id", "msg_1")
	header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	header.Set("webhook-signature", sig)
	for _, tc := range []struct {
		secret string
		ok     bool
	}{{newer, true}, {older, true}, {other, false}} {
		wh, err := standardwebhooks.NewWebhook(tc.secret)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(body, header); (err == nil) != tc.ok {
			t.Errorf("verified with %s: %v, want ok %v", tc.secret, err, tc.ok)
		}
	}
}
